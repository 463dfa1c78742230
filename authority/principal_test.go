package authority

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// servers is a fixed session → server table; a session absent from it
// has no known server.
type servers map[string]string

func (s servers) ServerOf(session string) (string, bool) {
	server, ok := s[session]
	return server, ok
}

func operator(t *testing.T, name string, can identity.Right, scope ...string) Principal {
	t.Helper()
	s, err := identity.ParseScope(scope)
	if err != nil {
		t.Fatal(err)
	}
	return Operator(identity.Operator{Name: name, Can: can, Servers: s})
}

func TestPrincipals(t *testing.T) {
	t.Parallel()
	known := servers{"s": "deploy-web"}
	ev := &aep.Event{Type: "attention.answered", Session: "s"}
	for _, tc := range []struct {
		name                 string
		p                    Principal
		sees, filter, answer bool
		refusal              Reason
	}{
		{name: "the token's holder", p: TokenHolder(), sees: true, answer: true},
		{name: "a bridge that proved the token", p: Bridge("fp"), sees: true, answer: true},
		{name: "no rights", p: Principal{}, filter: true, refusal: ReasonNoRight},
		{name: "read only", p: Principal{Rights: Read}, sees: true, refusal: ReasonNoRight},
		{name: "command only", p: Principal{Rights: Command}, filter: true, answer: true},
		{name: "an unscoped answering operator", p: operator(t, "alice", identity.Answer), sees: true, answer: true},
		{name: "an operator that reads", p: operator(t, "bob", identity.Read), sees: true, refusal: ReasonReadOnly},
		{name: "an operator in scope", p: operator(t, "carol", identity.Answer, "deploy-*"), sees: true, filter: true, answer: true},
		{name: "an operator out of scope", p: operator(t, "dave", identity.Answer, "billing"), filter: true, refusal: ReasonScope},
		{name: "a reader out of scope", p: operator(t, "erin", identity.Read, "billing"), filter: true, refusal: ReasonScope},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Sees(ev, known); got != tc.sees {
				t.Errorf("Sees = %v; want %v", got, tc.sees)
			}
			if f := tc.p.Filter(known); (f != nil) != tc.filter || (f != nil && f(ev) != tc.sees) {
				t.Errorf("Filter = %v; want a filter %v that agrees with Sees", f != nil, tc.filter)
			}
			why := tc.p.MayCommand(&aep.Event{Type: "control.attention.respond", Session: "s"}, known)
			switch {
			case tc.answer && why != nil:
				t.Errorf("MayCommand = %v; want allowed", why)
			case !tc.answer && (why == nil || why.Reason != tc.refusal || why.Code() != "unauthorized"):
				t.Errorf("MayCommand = %v; want refused %v, unauthorized", why, tc.refusal)
			}
		})
	}
	if p := Bridge("fp"); !p.Proved || p.Key != "fp" || TokenHolder().Proved || p.Name != TokenHolderName || TokenHolder().Name != TokenHolderName {
		t.Errorf("Bridge(fp) = %+v; want proved with its key, named as the token's holder, and the token's holder not proved", p)
	}
}

// TestScopedViews is what a principal scoped to deploy-* sees of each
// event: the session's server must be known, from its questions, for any
// event of it; a question is judged by its own subject.
func TestScopedViews(t *testing.T) {
	t.Parallel()
	p := operator(t, "carol", identity.Answer, "deploy-*")
	known := servers{"web": "deploy-web", "bill": "billing"}
	tests := []struct {
		name string
		ev   aep.Event
		sees bool
	}{
		{"a question of an in-scope server", aep.Event{Type: "attention.requested", Session: "web", Subject: "deploy-web"}, true},
		{"its answer", aep.Event{Type: "attention.answered", Session: "web", Subject: "q1"}, true},
		{"its session's start", aep.Event{Type: "session.started", Session: "web"}, true},
		{"a command in it", aep.Event{Type: "control.attention.respond", Session: "web", Subject: "q1"}, true},
		{"a question of another server", aep.Event{Type: "attention.requested", Session: "bill", Subject: "billing"}, false},
		{"its answer", aep.Event{Type: "attention.answered", Session: "bill", Subject: "q2"}, false},
		{"an ack in it", aep.Event{Type: "control.accepted", Session: "bill"}, false},
		{"a session that asked nothing yet", aep.Event{Type: "session.started", Session: "new"}, false},
		{"the first question of a new session, in scope", aep.Event{Type: "attention.requested", Session: "new", Subject: "deploy-db"}, true},
		{"a question naming another server than its session's", aep.Event{Type: "attention.requested", Session: "bill", Subject: "deploy-x"}, false},
		{"an event of no session", aep.Event{Type: "agent.status"}, false},
		{"a question of no session", aep.Event{Type: "attention.requested", Subject: "deploy-x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Sees(&tc.ev, known); got != tc.sees {
				t.Errorf("Sees(%s of %q) = %v; want %v", tc.ev.Type, tc.ev.Session, got, tc.sees)
			}
		})
	}
	if !p.SeesSession("web", known) || p.SeesSession("bill", known) || p.SeesSession("new", known) {
		t.Errorf("SeesSession: want web only")
	}
	why := p.MayCommand(&aep.Event{Type: "control.attention.respond", Session: "bill"}, known)
	if why == nil || !strings.Contains(why.Detail, `operator "carol" reaches the questions of servers deploy-* only`) || strings.Contains(why.Detail, "billing") {
		t.Errorf("out of scope: %v; want a detail naming carol's scope and not the session's server", why)
	}
}

func TestRefusalCodes(t *testing.T) {
	t.Parallel()
	for r, want := range map[Reason]string{ReasonNoRoute: "no-route", ReasonAmbiguous: "ambiguous", ReasonSourceLive: "unauthorized",
		ReasonKeySession: "unauthorized", ReasonScope: "unauthorized", ReasonReadOnly: "unauthorized"} {
		if got := (&Refusal{Reason: r}).Code(); got != want {
			t.Errorf("%v: code %q; want %q", r, got, want)
		}
	}
	for r := ReasonNoRight; r <= ReasonOperator; r++ {
		if r.String() == "" || r.String()[0] == 'R' {
			t.Errorf("reason %d has no name", int(r))
		}
	}
}

// TestOperatorsNeverEmit: an operator's connection may say hello as an
// emitter; its events are refused all the same, and so are its POSTs.
func TestOperatorsNeverEmit(t *testing.T) {
	t.Parallel()
	tab := NewTable[string, string](nopQuestions{})
	c := tab.Connect(operator(t, "alice", identity.Answer), "alice")
	tab.SayHello(c, Hello{Emitter: true, Resume: strings.Repeat("r", 43)})
	if _, why := tab.Write(c, "aep://x/agent/a/session/s", "s"); why == nil || why.Reason != ReasonOperator {
		t.Errorf("an operator's event: %v; want refused as an operator's", why)
	}
	if why := tab.Post(operator(t, "alice", identity.Answer), "aep://x/agent/a/session/s", "s"); why == nil || why.Reason != ReasonOperator {
		t.Errorf("an operator's POST: %v; want refused as an operator's", why)
	}
}

type nopQuestions struct{}

func (nopQuestions) OpenFrom(string) int                    { return 0 }
func (nopQuestions) DropOpen(string, func(string) bool) int { return 0 }
func (nopQuestions) Left(string, bool)                      {}
func (nopQuestions) Back(string)                            {}

// TestOperatorGroups: a named operator's principal carries its record's
// groups, as its own copy; the shared token's holder and bridges have
// none.
func TestOperatorGroups(t *testing.T) {
	t.Parallel()
	rec := identity.Operator{Name: "alice", Can: identity.Answer, Groups: []string{"oncall", "sre"}}
	p := Operator(rec)
	if diff := cmp.Diff([]string{"oncall", "sre"}, p.Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	p.Groups[0] = "changed"
	if rec.Groups[0] != "oncall" {
		t.Errorf("changing the principal's groups changed the record's")
	}
	if TokenHolder().Groups != nil || Bridge("").Groups != nil {
		t.Errorf("the token holder or a bridge is in a group")
	}
}

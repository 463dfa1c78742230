package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// emitter is a test session: source, session and the next seq.
type emitter struct {
	source, session string
	seq             int64
}

func newEmitter(name string) *emitter {
	return &emitter{source: "aep://h/agent/a/session/" + name, session: name}
}

// event builds the next event of the session, with its encoding.
func (e *emitter) event(id, typ, subject string, data any) (aep.Event, []byte) {
	ev := aep.Event{AEP: aep.Version, ID: id, Type: typ, Subject: subject, Time: "2026-01-01T00:00:00Z",
		Source: e.source, Agent: "a", Session: e.session, Seq: aep.Int64(e.seq), Severity: aep.SeverityNotice}
	e.seq++
	if data != nil {
		ev.Data, _ = json.Marshal(data)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return ev, raw
}

func (e *emitter) write(h *Hub, id, typ, subject string) {
	ev, raw := e.event(id, typ, subject, nil)
	h.Write(ev, raw)
}

// ids lists what a subscription starts with.
func ids(s *Subscription) []string {
	var out []string
	for d := range s.Backlog() {
		out = append(out, d.Event.ID)
	}
	return out
}

// TestOpenQuestionsOutliveEveryEviction fills a small hub far past its
// bounds: the replay keeps only recent history, and every subscription,
// whatever its from, still starts with each open question, once.
func TestOpenQuestionsOutliveEveryEviction(t *testing.T) {
	h := NewHubWith(HubOptions{ReplayPerSession: 4, ReplaySessions: 1})
	b := newEmitter("bridge")
	b.write(h, "Q1", "attention.requested", "srv")
	b.write(h, "Q2", "attention.requested", "srv")
	b.write(h, "R2", "attention.resolved", "Q2")
	for i := range 10 { // the session's own history pushes the questions out of its buffer
		b.write(h, fmt.Sprintf("P%d", i), "progress.status", "")
	}
	before, _ := h.SubscribeFrom(func(ev *aep.Event) bool { return ev.Session == "bridge" }, From{All: true}, 1)
	defer before.Close()
	if diff := cmp.Diff([]string{"Q1", "P6", "P7", "P8", "P9"}, ids(before)); diff != "" {
		t.Fatalf("before the noise (-want +got):\n%s", diff)
	}
	for i := range 5 { // other sessions push the whole session out of the hub
		newEmitter(fmt.Sprintf("noise%d", i)).write(h, fmt.Sprintf("N%d", i), "session.started", "")
	}
	tests := []struct {
		name string
		from From
		f    Filter
		want []string
	}{
		{"live only", From{}, nil, []string{"Q1"}},
		{"replay all", From{All: true}, nil, []string{"Q1", "N4"}},
		{"from a position after the question", From{Positions: []Position{{Session: "bridge", Seq: 8}}}, nil, []string{"Q1"}},
		{"a filter the question does not match", From{}, func(ev *aep.Event) bool { return ev.Type == "session.started" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, _ := h.SubscribeFrom(tt.f, tt.from, 1)
			defer sub.Close()
			if diff := cmp.Diff(tt.want, ids(sub)); diff != "" {
				t.Fatalf("backlog (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenQuestionNeverTwiceInASubscription: a question still in the
// replay is delivered once, first; its re-announcement (a relay link
// reconnecting) is not published again.
func TestOpenQuestionNeverTwiceInASubscription(t *testing.T) {
	h := NewHub()
	b := newEmitter("bridge")
	b.write(h, "S", "session.started", "")
	ev, raw := b.event("Q", "attention.requested", "srv", nil)
	h.Write(ev, raw)
	sub, _ := h.SubscribeFrom(nil, From{All: true}, 8)
	defer sub.Close()
	if open, replay := sub.Counts(); open != 1 || replay != 1 {
		t.Fatalf("counts open %d replay %d; want 1 and 1", open, replay)
	}
	if diff := cmp.Diff([]string{"Q", "S"}, ids(sub)); diff != "" {
		t.Fatalf("backlog (-want +got):\n%s", diff)
	}
	if err := h.Ingest([]*aep.Event{&ev}, [][]byte{raw}); err != nil {
		t.Fatalf("re-announcing: %v", err)
	}
	if n := len(sub.C); n != 0 {
		t.Fatalf("the re-announced question was published again (%d live)", n)
	}
}

// TestOpenQuestionsAreByteIdentical: the snapshot hands out the question's
// original encoding.
func TestOpenQuestionsAreByteIdentical(t *testing.T) {
	h := NewHub()
	ev, raw := newEmitter("s").event("Q", "attention.requested", "srv", map[string]any{"kind": "input", "prompt": "p"})
	raw = append([]byte(" "), raw...) // an encoding this package would not produce
	h.Write(ev, raw)
	sub, _ := h.SubscribeFrom(nil, From{}, 1)
	defer sub.Close()
	for d := range sub.Backlog() {
		if string(d.Raw) != string(raw) {
			t.Fatalf("got %s; want the original bytes %s", d.Raw, raw)
		}
	}
}

// TestOnlyTheOwnerSettlesAQuestion pins AEP-0002 §7 with the threat model:
// a question leaves the open set only by its owner's lifecycle (same source
// and session) or its owner ending the session.
func TestOnlyTheOwnerSettlesAQuestion(t *testing.T) {
	owner := newEmitter("s")
	sameSessionOtherSource := &emitter{source: "aep://evil/agent/a/session/s", session: "s"}
	sameSourceOtherSession := &emitter{source: owner.source, session: "other"}
	tests := []struct {
		name   string
		by     *emitter
		typ    string
		stays  bool
		ingest string // the code Ingest refuses it with, "" when accepted
	}{
		{"resolved by the owner", owner, "attention.resolved", false, ""},
		{"timeout by the owner", owner, "attention.timeout", false, ""},
		{"answered by the owner (transient)", owner, "attention.answered", true, ""},
		{"resolved by another source", sameSessionOtherSource, "attention.resolved", true, "unauthorized"},
		{"answered by another source", sameSessionOtherSource, "attention.answered", true, "unauthorized"},
		{"timeout from another session", sameSourceOtherSession, "attention.timeout", true, "unauthorized"},
		{"routed by anyone", sameSessionOtherSource, "attention.routed", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub()
			owner.write(h, "Q", "attention.requested", "srv")
			ev, raw := tt.by.event("L", tt.typ, "Q", nil)
			err := h.Ingest([]*aep.Event{&ev}, [][]byte{raw})
			var ie *IngestError
			switch {
			case tt.ingest == "" && err != nil:
				t.Fatalf("Ingest: %v; want accepted", err)
			case tt.ingest != "" && (!errors.As(err, &ie) || ie.Code != tt.ingest):
				t.Fatalf("Ingest: %v; want %s", err, tt.ingest)
			}
			h.Write(ev, raw) // even written in-process, a foreign lifecycle settles nothing
			if got := h.Stats().Open; (got == 1) != tt.stays {
				t.Fatalf("open questions %d; want the question to stay open: %v", got, tt.stays)
			}
		})
	}
}

// TestReplayEvictsSettledHistoryFirst: past the total bounds, the least
// recently written session with no open question gives up its history
// first; a session with an open question keeps its history longest.
func TestReplayEvictsSettledHistoryFirst(t *testing.T) {
	probe := newEmitter("x")
	ev, raw := probe.event("ID", "progress.status", "", nil)
	size := deliverySize(&Delivery{Event: ev, Raw: raw})
	h := NewHubWith(HubOptions{ReplayBytes: 6 * size, ReplaySessions: 2})
	asking, b, c := newEmitter("asking"), newEmitter("b"), newEmitter("c")
	asking.write(h, "Q", "attention.requested", "srv") // the oldest session, and it asks
	b.write(h, "B1", "progress.status", "")
	b.write(h, "B2", "progress.status", "")
	asking.write(h, "A1", "progress.status", "")
	c.write(h, "C1", "progress.status", "") // a third session: b (settled) goes, not asking
	for i := range 6 {                      // past the byte budget: c's oldest go, not asking's
		c.write(h, fmt.Sprintf("C%d", i+2), "progress.status", "")
	}
	sub, _ := h.SubscribeFrom(nil, From{All: true}, 1)
	defer sub.Close()
	got := ids(sub)
	// asking keeps everything; b is gone; c keeps its newest, in order.
	if len(got) < 4 || got[0] != "Q" || got[1] != "A1" || got[len(got)-1] != "C7" {
		t.Fatalf("held %v; want Q, A1, then c's newest events ending at C7", got)
	}
	for i, id := range got[2:] {
		if want := fmt.Sprintf("C%d", 8-len(got[2:])+i); id != want {
			t.Fatalf("held %v; want c's newest events in order (%s at %d)", got, want, i)
		}
	}
	if st := h.Stats(); st.ReplayBytes > 6*size || st.ReplaySessions != 2 {
		t.Fatalf("stats %+v; want at most %d bytes in 2 sessions", st, 6*size)
	}
}

func TestReplayBoundsOneSessionInBytes(t *testing.T) {
	h := NewHubWith(HubOptions{ReplaySessionBytes: 4 << 10})
	e := newEmitter("s")
	for i := range 20 {
		ev, raw := e.event(fmt.Sprintf("E%02d", i), "progress.status", "", map[string]string{"x": strings.Repeat("y", 900)})
		h.Write(ev, raw)
	}
	st := h.Stats()
	if st.ReplayBytes > 4<<10 || st.ReplayEvents < 1 {
		t.Fatalf("stats %+v; want the session within 4 KiB", st)
	}
	sub, _ := h.SubscribeFrom(nil, From{All: true}, 1)
	defer sub.Close()
	if got := ids(sub); got[len(got)-1] != "E19" {
		t.Fatalf("held %v; want the newest kept", got)
	}
}

func TestSessionEndedSettlesWhatItsOwnerLeftOpen(t *testing.T) {
	h := NewHub()
	a, b := newEmitter("a"), newEmitter("b")
	a.write(h, "QA", "attention.requested", "srv")
	b.write(h, "QB", "attention.requested", "srv")
	(&emitter{source: "aep://evil", session: "a"}).write(h, "E1", "session.ended", "")
	a.write(h, "E2", "session.ended", "")
	sub, _ := h.SubscribeFrom(nil, From{}, 1)
	defer sub.Close()
	if diff := cmp.Diff([]string{"QB"}, ids(sub)); diff != "" {
		t.Fatalf("open after a's end (-want +got):\n%s", diff)
	}
}

// TestIngestRefusesAQuestionIDOfAnotherOwner: consumers address questions
// by id, so an ingested question may not take an open one's id; a batch is
// refused whole, naming the line.
func TestIngestRefusesAQuestionIDOfAnotherOwner(t *testing.T) {
	h := NewHub()
	newEmitter("s").write(h, "Q", "attention.requested", "srv")
	other := newEmitter("t")
	ok, okRaw := other.event("FINE", "progress.status", "", nil)
	dup, dupRaw := other.event("Q", "attention.requested", "srv", nil)
	err := h.Ingest([]*aep.Event{&ok, &dup}, [][]byte{okRaw, dupRaw})
	var ie *IngestError
	if !errors.As(err, &ie) || ie.Code != "unauthorized" || ie.Index != 1 {
		t.Fatalf("got %v; want unauthorized at index 1", err)
	}
	if st := h.Stats(); st.ReplayEvents != 1 {
		t.Fatalf("held %d events; want the refused batch to leave nothing", st.ReplayEvents)
	}
	// Within one batch too: a question and another source's lifecycle.
	q, qRaw := other.event("Q2", "attention.requested", "srv", nil)
	res, resRaw := (&emitter{source: "aep://evil", session: "t"}).event("R", "attention.resolved", "Q2", nil)
	if err := h.Ingest([]*aep.Event{&q, &res}, [][]byte{qRaw, resRaw}); !errors.As(err, &ie) || ie.Index != 1 {
		t.Fatalf("got %v; want the foreign resolution refused at index 1", err)
	}
}

func TestIngestBoundsOpenQuestionsInBytes(t *testing.T) {
	h := NewHubWith(HubOptions{OpenBytes: 8 << 10, OpenShare: -1}) // the total bound alone
	e := newEmitter("s")
	big := map[string]string{"prompt": strings.Repeat("x", 3<<10)}
	var refused *IngestError
	accepted := 0
	for i := range 10 {
		ev, raw := e.event(fmt.Sprintf("Q%d", i), "attention.requested", "srv", big)
		if err := h.Ingest([]*aep.Event{&ev}, [][]byte{raw}); err != nil {
			if !errors.As(err, &refused) {
				t.Fatalf("Ingest: %v", err)
			}
			break
		}
		accepted++
	}
	if refused == nil || refused.Code != "limit-exceeded" || !strings.Contains(refused.Detail, "8192 bytes") {
		t.Fatalf("got %v after %d; want limit-exceeded naming the 8192-byte bound", refused, accepted)
	}
	if st := h.Stats(); st.Open != accepted || st.OpenBytes > 8<<10 {
		t.Fatalf("stats %+v; want %d open within 8 KiB", st, accepted)
	}
	// The process's own questions are never refused.
	ev, raw := newEmitter("local").event("L", "attention.requested", "srv", big)
	h.Write(ev, raw)
	if st := h.Stats(); st.Open != accepted+1 {
		t.Fatalf("open %d; want the local question kept", st.Open)
	}
}

// TestSettledQuestionsKeepTheirOwner: once a question is settled, its
// lifecycle still comes only from its owner, among the most recently
// settled questions; the oldest owners are forgotten first.
func TestSettledQuestionsKeepTheirOwner(t *testing.T) {
	h := NewHub()
	h.open.keepSettled = 2
	owner, other := newEmitter("bridge"), newEmitter("evil")
	for _, id := range []string{"Q1", "Q2", "Q3"} {
		owner.write(h, id, "attention.requested", "srv")
	}
	owner.write(h, "R1", "attention.resolved", "Q1")
	owner.write(h, "T2", "attention.timeout", "Q2")
	owner.write(h, "E", "session.ended", "") // settles Q3
	ingest := func(e *emitter, id, typ, subject string) error {
		ev, raw := e.event(id, typ, subject, nil)
		return h.Ingest([]*aep.Event{&ev}, [][]byte{raw})
	}
	for _, typ := range []string{"attention.answered", "attention.resolved", "attention.timeout", "attention.dismissed"} {
		for _, q := range []string{"Q2", "Q3"} {
			var ie *IngestError
			if err := ingest(other, "F-"+typ+q, typ, q); !errors.As(err, &ie) || ie.Code != "unauthorized" || !strings.Contains(ie.Detail, "belongs to another emitter") {
				t.Errorf("%s for settled %s from another emitter: %v; want unauthorized", typ, q, err)
			}
		}
	}
	if err := ingest(other, "Q3", "attention.requested", "srv"); err == nil {
		t.Errorf("another emitter asking a question with a settled question's id: accepted; want unauthorized")
	}
	if err := ingest(owner, "A3", "attention.answered", "Q3"); err != nil {
		t.Errorf("the owner's own late event for its settled question: %v; want it accepted", err)
	}
	// Q1 was settled first: with room for two, its owner is forgotten.
	if err := ingest(other, "F-old", "attention.answered", "Q1"); err != nil {
		t.Errorf("an event for a question settled before the last %d: %v; want it accepted (forgotten)", h.open.keepSettled, err)
	}
}

// TestDismissedIsALifecycleEvent: attention.dismissed, like answered,
// resolved and timeout, comes only from the question's owner.
func TestDismissedIsALifecycleEvent(t *testing.T) {
	for _, typ := range []string{"attention.answered", "attention.resolved", "attention.timeout", "attention.dismissed"} {
		if !IsLifecycle(typ) {
			t.Errorf("IsLifecycle(%q) = false; want true", typ)
		}
	}
	h := NewHub()
	newEmitter("bridge").write(h, "Q", "attention.requested", "srv")
	ev, raw := newEmitter("evil").event("D", "attention.dismissed", "Q", nil)
	if err := h.Ingest([]*aep.Event{&ev}, [][]byte{raw}); err == nil {
		t.Fatal("attention.dismissed of another emitter's open question: accepted; want unauthorized")
	}
}

// TestDropOpenRemovesOnlyWhatItSelects: DropOpen takes out of the open set
// the questions of one session under the sources it selects, and nothing
// else: the session's other questions, the same sources' questions in
// other sessions and the history stay; a dropped question's id stays its
// asker's.
func TestDropOpenRemovesOnlyWhatItSelects(t *testing.T) {
	h := NewHub()
	bridge := &emitter{source: "aep://vm/agent/b/session/S", session: "S"}
	squatter := &emitter{source: "aep://evil/agent/e", session: "S"}
	elsewhere := &emitter{source: "aep://evil/agent/e", session: "T"}
	bridge.write(h, "B1", "attention.requested", "srv")
	squatter.write(h, "X1", "attention.requested", "srv")
	squatter.write(h, "X2", "attention.requested", "srv")
	elsewhere.write(h, "X3", "attention.requested", "srv")
	bytesBefore := h.Stats().OpenBytes

	if n := h.DropOpen("S", func(source string) bool { return source == squatter.source }); n != 2 {
		t.Fatalf("dropped %d; want the squatter's 2 questions in S", n)
	}
	sub, _ := h.SubscribeFrom(nil, From{}, 8)
	defer sub.Close()
	if diff := cmp.Diff([]string{"B1", "X3"}, ids(sub)); diff != "" {
		t.Fatalf("open set after the drop (-want +got):\n%s", diff)
	}
	if st := h.Stats(); st.Open != 2 || st.OpenBytes >= bytesBefore || st.OpenBytes <= 0 {
		t.Fatalf("stats %+v (open bytes %d before); want 2 open and fewer bytes", st, bytesBefore)
	}
	if n := h.OpenFrom(squatter.source); n != 1 {
		t.Fatalf("OpenFrom(squatter) = %d; want its question in T only", n)
	}
	all, _ := h.SubscribeFrom(func(ev *aep.Event) bool { return ev.Session == "S" }, From{All: true}, 8)
	defer all.Close()
	if diff := cmp.Diff([]string{"B1", "X1", "X2"}, ids(all)); diff != "" {
		t.Fatalf("history of S after the drop (-want +got):\n%s", diff)
	}
	ev, raw := bridge.event("X1", "attention.requested", "srv", nil)
	var ie *IngestError
	if err := h.Ingest([]*aep.Event{&ev}, [][]byte{raw}); !errors.As(err, &ie) || ie.Code != "unauthorized" {
		t.Fatalf("another owner reusing a dropped question's id: %v; want unauthorized", err)
	}
	if n := h.DropOpen("S", func(string) bool { return false }); n != 0 {
		t.Fatalf("dropped %d with a selector that selects nothing", n)
	}
}

// TestExpiredQuestionsLeaveTheOpenSet: a question more than ExpiredGrace
// past its expires_at (its emitter gone without timing it out) leaves the
// open set, freeing its bytes; one within the grace, one without
// expires_at and one not yet expired stay; the history keeps them all,
// and the expired question's id stays its asker's.
func TestExpiredQuestionsLeaveTheOpenSet(t *testing.T) {
	h := NewHub()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	h.mu.Lock()
	h.open.now = func() time.Time { return now }
	h.mu.Unlock()
	gone := &emitter{source: "aep://vm/agent/b/session/S", session: "S"}
	ask := func(id string, expires time.Time) {
		data := map[string]any{"kind": "input", "prompt": "p"}
		if !expires.IsZero() {
			data["expires_at"] = expires.Format(time.RFC3339Nano)
		}
		ev, raw := gone.event(id, "attention.requested", "srv", data)
		h.Write(ev, raw)
	}
	ask("LONG-AGO", now.Add(-ExpiredGrace-time.Second))
	ask("IN-GRACE", now.Add(-ExpiredGrace+time.Second))
	ask("NO-EXPIRY", time.Time{})
	ask("LATER", now.Add(time.Hour))
	sub, _ := h.SubscribeFrom(nil, From{}, 8)
	defer sub.Close()
	if diff := cmp.Diff([]string{"IN-GRACE", "NO-EXPIRY", "LATER"}, ids(sub)); diff != "" {
		t.Fatalf("open set (-want +got):\n%s", diff)
	}
	if st := h.Stats(); st.Open != 3 {
		t.Fatalf("stats %+v; want 3 open", st)
	}
	all, _ := h.SubscribeFrom(nil, From{All: true}, 8)
	defer all.Close()
	if got := ids(all); !slices.Contains(got, "LONG-AGO") {
		t.Fatalf("history %v; want the expired question kept in it", got)
	}
	other := &emitter{source: "aep://evil/agent/e", session: "S"}
	ev, raw := other.event("X", "attention.resolved", "LONG-AGO", nil)
	var ie *IngestError
	if err := h.Ingest([]*aep.Event{&ev}, [][]byte{raw}); !errors.As(err, &ie) || ie.Code != "unauthorized" {
		t.Fatalf("another emitter settling the expired question: %v; want unauthorized", err)
	}
}

// TestOpenQuestionKeepsItsLatestVote: the approvals a permission request
// has so far ("1 of 2") are its state: every subscription gets the
// owner's latest vote right after the question, once, whatever replay
// has evicted; another emitter's vote is not kept, and the vote leaves
// with its settled question.
func TestOpenQuestionKeepsItsLatestVote(t *testing.T) {
	h := NewHubWith(HubOptions{ReplayPerSession: 4, ReplaySessions: 4})
	b := newEmitter("bridge")
	b.write(h, "Q", "attention.requested", "srv")
	b.write(h, "V1", TypeQuestionVote, "Q")
	b.write(h, "V2", TypeQuestionVote, "Q")
	newEmitter("mallory").write(h, "VX", TypeQuestionVote, "Q")
	sub, _ := h.SubscribeFrom(nil, From{All: true}, 8)
	if diff := cmp.Diff([]string{"Q", "V2", "V1", "VX"}, ids(sub)); diff != "" {
		t.Fatalf("with the votes still in replay (-want +got):\n%s", diff)
	}
	sub.Close()
	for i := range 10 { // the session's own history pushes the votes out of replay
		b.write(h, fmt.Sprintf("P%d", i), "progress.status", "")
	}
	for _, from := range []From{{}, {All: true}} {
		sub, _ := h.SubscribeFrom(func(ev *aep.Event) bool { return ev.Session == "bridge" }, from, 8)
		got := ids(sub)
		sub.Close()
		if len(got) < 2 || got[0] != "Q" || got[1] != "V2" || slices.Contains(got[2:], "V2") {
			t.Fatalf("from %+v the backlog is %v; want Q, then its latest vote V2, once", from, got)
		}
	}
	b.write(h, "R", "attention.resolved", "Q")
	sub, _ = h.SubscribeFrom(nil, From{}, 8)
	defer sub.Close()
	if got := ids(sub); len(got) != 0 {
		t.Fatalf("after the question settled, a live subscription starts with %v; want nothing", got)
	}
}

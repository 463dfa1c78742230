package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const holdPolicy = `
groups:
  oncall: [alice, bob, carol]
  sre:
    identity: true
rules:
  - id: two
    tool: two
    action: ask
    approvers: [group:oncall, dave]
    approvals: 2
    timeout: 10m
    remember: session
  - id: one
    tool: one
    action: ask
    approvers: [alice, group:sre]
    timeout: 1m
    on_timeout: allow
`

// t0 is when every scripted hold is raised.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// step is one line of a hold's script: at an offset from t0, an actor
// votes ("alice allow", "zoe[sre] deny", "bob allow-session"), or the
// owner's timer fires ("expire") or the client cancels ("withdraw").
type step struct {
	at  time.Duration
	do  string
	ref RefusalKind // the refusal wanted; 0 wants none
	// state and approved are the outcome wanted after the step.
	state    State
	approved []string
}

func parseStep(t *testing.T, do string) (Vote, string) {
	t.Helper()
	f := strings.Fields(do)
	if len(f) == 1 {
		return Vote{}, f[0]
	}
	who, groups, _ := strings.Cut(f[0], "[")
	a := Actor{Name: who}
	if groups != "" {
		a.Groups = strings.Split(strings.TrimSuffix(groups, "]"), ",")
	}
	v, ok := ParseVerdict(f[1])
	if !ok && f[1] != "maybe" {
		t.Fatalf("bad step %q", do)
	}
	return Vote{Actor: a, Verdict: v, Reason: strings.Join(f[2:], " ")}, ""
}

func TestHoldScripts(t *testing.T) {
	t.Parallel()
	p := mustParse(t, holdPolicy)
	tests := []struct {
		name  string
		tool  string
		steps []step
		// want is the final outcome, Grant compared apart.
		want  Outcome
		grant *Grant
	}{
		{name: "one approver allows", tool: "one",
			steps: []step{{at: 10 * time.Second, do: "alice allow", state: Allowed, approved: []string{"alice"}}},
			want:  Outcome{State: Allowed, Approved: []string{"alice"}, Needed: 1},
			grant: &Grant{Session: "s1", Rule: "one", Scope: ScopeCall, By: []string{"alice"}, Granted: t0.Add(10 * time.Second), Expires: t0.Add(10*time.Second + CallGrantWindow)}},
		{name: "two-person rule; the same operator twice is refused", tool: "two",
			steps: []step{
				{at: time.Minute, do: "alice allow", state: Pending, approved: []string{"alice"}},
				{at: 2 * time.Minute, do: "alice allow", ref: AlreadyApproved, state: Pending, approved: []string{"alice"}},
				{at: 3 * time.Minute, do: "dave allow", state: Allowed, approved: []string{"alice", "dave"}},
			},
			want:  Outcome{State: Allowed, Approved: []string{"alice", "dave"}, Needed: 2},
			grant: &Grant{Session: "s1", Rule: "two", Scope: ScopeCall, By: []string{"alice", "dave"}, Granted: t0.Add(3 * time.Minute), Expires: t0.Add(3*time.Minute + CallGrantWindow)}},
		{name: "an operator outside the rule is refused", tool: "two",
			steps: []step{
				{at: time.Minute, do: "mallory allow", ref: NotApprover, state: Pending},
				{at: time.Minute, do: "mallory deny", ref: NotApprover, state: Pending},
				{at: time.Minute, do: "zoe[sre] allow", ref: NotApprover, state: Pending}, // sre is not an approver of two
				{at: time.Minute, do: "oncall allow", ref: NotApprover, state: Pending},   // a group's name is not a member
				{at: time.Minute, do: "[oncall] allow", ref: NotApprover, state: Pending}, // no name
			},
			want: Outcome{State: Pending, Needed: 2}},
		{name: "a deny from any approver denies at once", tool: "two",
			steps: []step{
				{at: time.Minute, do: "alice allow", state: Pending, approved: []string{"alice"}},
				{at: 2 * time.Minute, do: "carol deny not during the freeze", state: Denied, approved: []string{"alice"}},
				{at: 3 * time.Minute, do: "bob allow", ref: Settled, state: Denied, approved: []string{"alice"}},
			},
			want: Outcome{State: Denied, Approved: []string{"alice"}, Needed: 2, DeniedBy: "carol", Reason: "not during the freeze"}},
		{name: "an approver who allowed may still deny", tool: "two",
			steps: []step{
				{at: time.Minute, do: "alice allow", state: Pending, approved: []string{"alice"}},
				{at: 2 * time.Minute, do: "alice deny", state: Denied, approved: []string{"alice"}},
			},
			want: Outcome{State: Denied, Approved: []string{"alice"}, Needed: 2, DeniedBy: "alice"}},
		{name: "timeout denies", tool: "two",
			steps: []step{
				{at: time.Minute, do: "bob allow", state: Pending, approved: []string{"bob"}},
				{at: 10*time.Minute - time.Nanosecond, do: "expire", state: Pending, approved: []string{"bob"}},
				{at: 10 * time.Minute, do: "expire", state: Denied, approved: []string{"bob"}},
				{at: 11 * time.Minute, do: "alice allow", ref: Settled, state: Denied, approved: []string{"bob"}},
			},
			want: Outcome{State: Denied, Approved: []string{"bob"}, Needed: 2, TimedOut: true, Reason: "no decision within 10m0s (1 of 2 approvals); the call was denied"}},
		{name: "a vote at the deadline settles the timeout first", tool: "two",
			steps: []step{
				{at: 10 * time.Minute, do: "alice allow", ref: Settled, state: Denied},
			},
			want: Outcome{State: Denied, Needed: 2, TimedOut: true, Reason: "no decision within 10m0s (0 of 2 approvals); the call was denied"}},
		{name: "on_timeout allow allows this call alone", tool: "one",
			steps: []step{{at: time.Minute, do: "expire", state: Allowed}},
			want:  Outcome{State: Allowed, Needed: 1, TimedOut: true},
			grant: &Grant{Session: "s1", Rule: "one", Scope: ScopeCall, Granted: t0.Add(time.Minute), Expires: t0.Add(time.Minute + CallGrantWindow)}},
		{name: "an identity group's member approves", tool: "one",
			steps: []step{{at: time.Second, do: "zoe[dev,sre] allow", state: Allowed, approved: []string{"zoe"}}},
			want:  Outcome{State: Allowed, Approved: []string{"zoe"}, Needed: 1},
			grant: &Grant{Session: "s1", Rule: "one", Scope: ScopeCall, By: []string{"zoe"}, Granted: t0.Add(time.Second), Expires: t0.Add(time.Second + CallGrantWindow)}},
		{name: "allow-session from every approval", tool: "two",
			steps: []step{
				{at: time.Minute, do: "alice allow-session", state: Pending, approved: []string{"alice"}},
				{at: time.Minute, do: "bob allow-session", state: Allowed, approved: []string{"alice", "bob"}},
			},
			want:  Outcome{State: Allowed, Approved: []string{"alice", "bob"}, Needed: 2},
			grant: &Grant{Session: "s1", Rule: "two", Scope: ScopeSession, By: []string{"alice", "bob"}, Granted: t0.Add(time.Minute)}},
		{name: "allow-session from one approval of two is for the call", tool: "two",
			steps: []step{
				{at: time.Minute, do: "alice allow-session", state: Pending, approved: []string{"alice"}},
				{at: time.Minute, do: "bob allow", state: Allowed, approved: []string{"alice", "bob"}},
			},
			want:  Outcome{State: Allowed, Approved: []string{"alice", "bob"}, Needed: 2},
			grant: &Grant{Session: "s1", Rule: "two", Scope: ScopeCall, By: []string{"alice", "bob"}, Granted: t0.Add(time.Minute), Expires: t0.Add(time.Minute + CallGrantWindow)}},
		{name: "allow-session where the rule does not remember", tool: "one",
			steps: []step{
				{at: time.Second, do: "alice allow-session", ref: NotOffered, state: Pending},
				{at: time.Second, do: "alice maybe", ref: NotOffered, state: Pending},
			},
			want: Outcome{State: Pending, Needed: 1}},
		{name: "withdrawn by the client", tool: "two",
			steps: []step{
				{at: time.Minute, do: "alice allow", state: Pending, approved: []string{"alice"}},
				{at: 2 * time.Minute, do: "withdraw", state: Withdrawn, approved: []string{"alice"}},
				{at: 3 * time.Minute, do: "bob allow", ref: Settled, state: Withdrawn, approved: []string{"alice"}},
				{at: 11 * time.Minute, do: "expire", state: Withdrawn, approved: []string{"alice"}},
			},
			want: Outcome{State: Withdrawn, Approved: []string{"alice"}, Needed: 2}},
		{name: "a vote after the call is allowed", tool: "one",
			steps: []step{
				{at: time.Second, do: "alice allow", state: Allowed, approved: []string{"alice"}},
				{at: time.Second, do: "alice deny", ref: Settled, state: Allowed, approved: []string{"alice"}},
			},
			want:  Outcome{State: Allowed, Approved: []string{"alice"}, Needed: 1},
			grant: &Grant{Session: "s1", Rule: "one", Scope: ScopeCall, By: []string{"alice"}, Granted: t0.Add(time.Second), Expires: t0.Add(time.Second + CallGrantWindow)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := p.Decide(Call{Tool: tt.tool, Arguments: []byte(`{"x":1}`)})
			digest := ArgsDigest([]byte(`{"x":1}`))
			h, err := NewHold(d, "s1", digest, t0)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				vote, op := parseStep(t, s.do)
				var out Outcome
				err = nil
				switch op {
				case "expire":
					h.Expire(now)
					out = h.Outcome()
				case "withdraw":
					h.Withdraw()
					out = h.Outcome()
				default:
					out, err = h.Vote(vote, now)
				}
				var r *Refusal
				switch {
				case s.ref == 0 && err != nil:
					t.Fatalf("step %d %q: refused: %v", i+1, s.do, err)
				case s.ref != 0 && (!errors.As(err, &r) || r.Kind != s.ref):
					t.Fatalf("step %d %q: error %v; want a refusal of kind %d", i+1, s.do, err, s.ref)
				}
				if out.State != s.state || !cmp.Equal(out.Approved, s.approved, cmpEmptyNil) {
					t.Fatalf("step %d %q: %s with %v approved; want %s with %v", i+1, s.do, out.State, out.Approved, s.state, s.approved)
				}
			}
			got := h.Outcome()
			gotGrant := got.Grant
			got.Grant = nil
			if diff := cmp.Diff(tt.want, got, cmpEmptyNil); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if tt.grant != nil {
				tt.grant.RuleHash, tt.grant.Revision, tt.grant.Digest = d.RuleHash, d.Revision, digest
			}
			if diff := cmp.Diff(tt.grant, gotGrant, cmpEmptyNil); diff != "" {
				t.Errorf("grant (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpEmptyNil treats an empty slice and nil alike.
var cmpEmptyNil = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestRefusals(t *testing.T) {
	t.Parallel()
	p := mustParse(t, holdPolicy)
	h, err := NewHold(p.Decide(Call{Tool: "two"}), "s1", ArgsDigest(nil), t0)
	if err != nil {
		t.Fatal(err)
	}
	// Each step runs in order on the one hold.
	tests := []struct {
		before       func()
		who          string
		verdict      Verdict
		reason, text string
	}{
		{nil, "mallory", VerdictAllow, "unauthorized", `operator "mallory" is not an approver of rule "two" (approvers: group:oncall, dave); ask one of them`},
		{func() { h.Vote(Vote{Actor: Actor{Name: "alice"}, Verdict: VerdictAllow}, t0) }, "alice", VerdictAllow,
			"refused", `operator "alice" has already approved this call; 1 of 2 approvals, another approver must allow`},
		{nil, "bob", Verdict(9), "invalid", "the verdict is not one the question offers; choose allow or deny"},
		{func() { h.Withdraw() }, "bob", VerdictAllow, "invalid", `the call held under rule "two" is already withdrawn; nothing to decide`},
	}
	for _, tt := range tests {
		if tt.before != nil {
			tt.before()
		}
		_, err := h.Vote(Vote{Actor: Actor{Name: tt.who}, Verdict: tt.verdict}, t0)
		var r *Refusal
		if !errors.As(err, &r) {
			t.Fatalf("%s %s: error %v; want a *Refusal", tt.who, tt.verdict, err)
		}
		if r.NackReason() != tt.reason || r.Error() != tt.text {
			t.Errorf("%s %s: refusal %q (%s); want %q (%s)", tt.who, tt.verdict, r.Error(), r.NackReason(), tt.text, tt.reason)
		}
	}
}

func TestNewHoldRefuses(t *testing.T) {
	t.Parallel()
	p := mustParse(t, holdPolicy)
	if _, err := NewHold(p.Decide(Call{Tool: "other"}), "s", "sha256:x", t0); err == nil || !strings.Contains(err.Error(), "the decision is allow, not ask") {
		t.Errorf("NewHold(allow decision): %v; want a refusal", err)
	}
	if _, err := NewHold(p.Decide(Call{Tool: "one"}), "s", "", t0); err == nil || !strings.Contains(err.Error(), "no arguments digest") {
		t.Errorf("NewHold without a digest: %v; want a refusal", err)
	}
	h, err := NewHold(p.Decide(Call{Tool: "one"}), "s", "sha256:x", t0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Deadline(), t0.Add(time.Minute); !got.Equal(want) {
		t.Errorf("Deadline() = %v; want %v", got, want)
	}
	if got := fmt.Sprint(h.Decision().Ask.Offers()); got != "[allow deny]" {
		t.Errorf("Offers() = %s; want [allow deny]", got)
	}
	if got := fmt.Sprint(p.Decide(Call{Tool: "two"}).Ask.Offers()); got != "[allow allow-session deny]" {
		t.Errorf("Offers() with remember: session = %s; want [allow allow-session deny]", got)
	}
}

// A held call keeps the decision it was raised under across a reload:
// the approvers and the revision of the old policy decide it.
func TestHoldAcrossReload(t *testing.T) {
	t.Parallel()
	r, err := NewReloader([]byte(holdPolicy))
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHold(r.Policy().Decide(Call{Tool: "one"}), "s1", ArgsDigest(nil), t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, err := r.Load([]byte(strings.Replace(holdPolicy, "approvers: [alice, group:sre]", "approvers: [erin]", 1))); err != nil || !changed {
		t.Fatalf("reload: changed %v, %v", changed, err)
	}
	out, err := h.Vote(Vote{Actor: Actor{Name: "alice"}, Verdict: VerdictAllow}, t0.Add(time.Second))
	if err != nil || out.State != Allowed {
		t.Fatalf("alice, an approver when the call was raised: %v, %v; want allowed", out.State, err)
	}
	if out.Grant.Revision == r.Policy().Revision() || out.Grant.Revision != h.Decision().Revision {
		t.Errorf("the grant's revision is %s; want the one the call was raised under, %s", out.Grant.Revision, h.Decision().Revision)
	}
}

package policy

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// allowSession runs a hold on a two rule call to an allow-session grant.
func allowSession(t *testing.T, d Decision, session, digest string, at time.Time) *Grant {
	t.Helper()
	h, err := NewHold(d, session, digest, at)
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"alice", "bob"} {
		if _, err := h.Vote(Vote{Actor: Actor{Name: who}, Verdict: VerdictAllowSession}, at); err != nil {
			t.Fatal(err)
		}
	}
	out := h.Outcome()
	if out.State != Allowed || out.Grant.Scope != ScopeSession {
		t.Fatalf("hold: %s, grant %+v; want an allow-session grant", out.State, out.Grant)
	}
	return out.Grant
}

func TestMemory(t *testing.T) {
	t.Parallel()
	p := mustParse(t, holdPolicy)
	args := []byte(`{"env":"staging","n":1}`)
	digest := ArgsDigest(args)
	d := p.Decide(Call{Tool: "two", Arguments: args})
	m := NewMemory(0)
	if err := m.Remember(allowSession(t, d, "s1", digest, t0)); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	// The same call in the same session passes, with any key order.
	same := p.Decide(Call{Tool: "two", Arguments: []byte(`{"n":1, "env":"staging"}`)})
	if g, ok := m.Lookup(same, "s1", ArgsDigest([]byte(`{"n":1, "env":"staging"}`)), later); !ok || g.Rule != "two" {
		t.Errorf("the same call later in the session: Lookup = %v; want the grant", ok)
	}
	tests := []struct {
		name    string
		d       Decision
		session string
		digest  string
	}{
		{"another session", d, "s2", digest},
		{"other arguments", d, "s1", ArgsDigest([]byte(`{"env":"production","n":1}`))},
		{"another rule", p.Decide(Call{Tool: "one", Arguments: args}), "s1", digest},
		{"not an ask", p.Decide(Call{Tool: "free", Arguments: args}), "s1", digest},
	}
	for _, tt := range tests {
		if _, ok := m.Lookup(tt.d, tt.session, tt.digest, later); ok {
			t.Errorf("%s: Lookup found the grant; want none", tt.name)
		}
	}
	if m.Len() != 1 {
		t.Errorf("Len() = %d; want 1", m.Len())
	}
	// A call grant is not remembered.
	h, _ := NewHold(p.Decide(Call{Tool: "one"}), "s1", digest, t0)
	out, _ := h.Vote(Vote{Actor: Actor{Name: "alice"}, Verdict: VerdictAllow}, t0)
	if err := m.Remember(out.Grant); err == nil {
		t.Error("Remember took a call grant; want it refused")
	}
	m.ForgetSession("s1")
	if _, ok := m.Lookup(d, "s1", digest, later); ok || m.Len() != 0 {
		t.Errorf("after ForgetSession: found %v, Len %d; want nothing", ok, m.Len())
	}
}

// A remembered grant applies only while its rule is unchanged: a reload
// that leaves the rule keeps it, one that changes the rule ends it.
func TestMemoryAcrossReloads(t *testing.T) {
	t.Parallel()
	p := mustParse(t, holdPolicy)
	digest := ArgsDigest(nil)
	m := NewMemory(0)
	if err := m.Remember(allowSession(t, p.Decide(Call{Tool: "two"}), "s1", digest, t0)); err != nil {
		t.Fatal(err)
	}
	unrelated := mustParse(t, strings.Replace(holdPolicy, "timeout: 1m", "timeout: 2m", 1))
	if _, ok := m.Lookup(unrelated.Decide(Call{Tool: "two"}), "s1", digest, t0); !ok {
		t.Error("a reload that changed another rule dropped the grant")
	}
	changed := mustParse(t, strings.Replace(holdPolicy, "oncall: [alice, bob, carol]", "oncall: [alice, bob]", 1))
	if _, ok := m.Lookup(changed.Decide(Call{Tool: "two"}), "s1", digest, t0); ok {
		t.Error("a reload that changed the rule's approvers kept the grant")
	}
	if m.Len() != 0 {
		t.Errorf("a grant whose rule changed is still kept (Len %d)", m.Len())
	}
	// A new rule ahead of it decides instead: nothing to look up.
	ahead := mustParse(t, strings.Replace(holdPolicy, "rules:\n", "rules:\n  - tool: two\n    action: deny\n    reason: frozen\n", 1))
	if d := ahead.Decide(Call{Tool: "two"}); d.Action != Deny {
		t.Fatalf("a deny rule ahead decides %s", d.Action)
	}
}

func TestMemoryExpiry(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `
groups:
  g: [alice, bob]
rules:
  - id: r
    action: ask
    approvers: group:g
    approvals: 2
    remember: session
    remember_for: 8h
`)
	d := p.Decide(Call{Tool: "x"})
	digest := ArgsDigest(nil)
	g := allowSession(t, d, "s1", digest, t0)
	if want := t0.Add(8 * time.Hour); !g.Expires.Equal(want) {
		t.Fatalf("grant expires %v; want %v", g.Expires, want)
	}
	m := NewMemory(0)
	m.Remember(g)
	if _, ok := m.Lookup(d, "s1", digest, t0.Add(8*time.Hour-time.Nanosecond)); !ok {
		t.Error("a grant is gone before its expiry")
	}
	if _, ok := m.Lookup(d, "s1", digest, t0.Add(8*time.Hour)); ok {
		t.Error("a grant covers a call at its expiry")
	}
}

func TestMemoryBound(t *testing.T) {
	t.Parallel()
	p := mustParse(t, holdPolicy)
	d := p.Decide(Call{Tool: "two"})
	m := NewMemory(3)
	var digests []string
	for i := range 5 {
		digest := ArgsDigest(fmt.Appendf(nil, `{"i":%d}`, i))
		digests = append(digests, digest)
		m.Remember(allowSession(t, d, "s1", digest, t0))
	}
	if m.Len() != 3 {
		t.Fatalf("Len() = %d; want the bound, 3", m.Len())
	}
	for i, digest := range digests {
		_, ok := m.Lookup(d, "s1", digest, t0)
		if want := i >= 2; ok != want {
			t.Errorf("grant %d kept = %v; want %v (the oldest are forgotten first)", i, ok, want)
		}
	}
}

func TestMemoryConcurrent(t *testing.T) {
	t.Parallel()
	p := mustParse(t, holdPolicy)
	d := p.Decide(Call{Tool: "two"})
	m := NewMemory(50)
	g := allowSession(t, d, "s1", ArgsDigest(nil), t0)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				c := *g
				c.Session = fmt.Sprintf("s%d", (i*100+j)%70)
				m.Remember(&c)
				m.Lookup(d, c.Session, c.Digest, t0)
				if j%30 == 0 {
					m.ForgetSession(c.Session)
				}
			}
		})
	}
	wg.Wait()
	if m.Len() > 50 {
		t.Errorf("Len() = %d; want at most 50", m.Len())
	}
}

package policy

import (
	"errors"
	"testing"
)

func TestReloader(t *testing.T) {
	t.Parallel()
	if _, err := NewReloader([]byte("rules:\n  - action: nope\n")); err == nil {
		t.Fatal("NewReloader took a bad policy; a bridge must not start with one")
	}
	good := []byte("rules:\n  - id: a\n    action: allow\n")
	r, err := NewReloader(good)
	if err != nil {
		t.Fatal(err)
	}
	first := r.Policy()
	if p, changed, err := r.Load(good); err != nil || changed || p != first {
		t.Errorf("Load(same bytes) = changed %v, %v; want the same policy, unchanged", changed, err)
	}
	// A bad document keeps the last good policy and says why.
	p, changed, err := r.Load([]byte("rules:\n  - id: a\n    action: deny\n"))
	var pe *ParseError
	if !errors.As(err, &pe) || changed || p != first || r.Policy() != first {
		t.Fatalf("Load(bad) = %v, changed %v; want a *ParseError and the last good policy in force", err, changed)
	}
	if r.Err() != err {
		t.Errorf("Err() = %v; want the failed load's error", r.Err())
	}
	if d := r.Policy().Decide(Call{Tool: "x"}); d.Action != Allow || d.Rule != "a" {
		t.Errorf("after a bad reload the policy decides %s by %q; want allow by a", d.Action, d.Rule)
	}
	// A good one replaces it.
	p, changed, err = r.Load([]byte("rules:\n  - id: b\n    action: deny\n    reason: r\n"))
	if err != nil || !changed || p == first || r.Policy() != p || r.Err() != nil {
		t.Fatalf("Load(good) = changed %v, %v; want the new policy in force", changed, err)
	}
	if d := r.Policy().Decide(Call{Tool: "x"}); d.Action != Deny || d.Rule != "b" {
		t.Errorf("after a good reload the policy decides %s by %q; want deny by b", d.Action, d.Rule)
	}
}

// Decisions are values: a later reload leaves them as they were made.
func TestDecisionKeepsItsRevision(t *testing.T) {
	t.Parallel()
	r, err := NewReloader([]byte("rules:\n  - id: r\n    action: ask\n    approvers: alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := r.Policy().Decide(Call{Tool: "x"})
	if _, _, err := r.Load([]byte("rules:\n  - id: r\n    action: ask\n    approvers: bob\n")); err != nil {
		t.Fatal(err)
	}
	if d.Revision == r.Policy().Revision() {
		t.Fatal("the reload kept the revision")
	}
	if !d.Ask.IsApprover(Actor{Name: "alice"}) || d.Ask.IsApprover(Actor{Name: "bob"}) {
		t.Error("a decision made before a reload changed its approvers")
	}
}

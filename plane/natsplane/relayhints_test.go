package natsplane

import (
	"testing"
)

// TestRelayHintsEvictOnlyTheirOwn: a session whose hint was dropped and
// added again keeps its new hint when the old one's turn to be evicted
// comes; the oldest hint in force goes instead.
func TestRelayHintsEvictOnlyTheirOwn(t *testing.T) {
	r := newRelayHints(2)
	r.add("s1", "t1", "door-f")
	r.drop("s1") // its claim was read
	r.add("s2", "t2", "door-f")
	r.add("s1", "t1b", "door-g") // relayed again, by another door
	r.add("s3", "t3", "door-f")  // one over the bound: the oldest in force goes
	if h, ok := r.of("s1"); !ok || h.tok != "t1b" || h.door != "door-g" {
		t.Errorf("s1's new hint: %+v, %v; want t1b through door-g", h, ok)
	}
	if _, ok := r.of("s2"); ok {
		t.Errorf("s2, the oldest hint in force, was kept past the bound")
	}
	if _, ok := r.of("s3"); !ok {
		t.Errorf("s3, the newest hint, is gone")
	}
	if len(r.by) != 2 {
		t.Errorf("%d hints kept; want the bound, 2", len(r.by))
	}
}

// TestRelayedOwnerIgnoresAMembersSession: a door that relayed events
// under a session id certified to a member this door did not know yet
// does not route that session's commands once the member is known: the
// session is the member's.
func TestRelayedOwnerIgnoresAMembersSession(t *testing.T) {
	const member = "mmmmmmmmmmmmmmmmmmmmmmmm" // a fingerprint's 24 base32 letters
	session := "s-1.k" + member
	m := &Member{fp: "ssssssssssssssssssssssss", peers: map[string]*peer{}, remote: map[string]remoteBinding{},
		ended: newRecent(8), relayedFrom: newRelayHints(8)}
	m.relayedFrom.add(session, token("src", session), "door-f")
	if got := m.relayedOwner(session); got != "door-f" {
		t.Fatalf("before the member is known: owner %q; want door-f, the door that relayed the session", got)
	}
	m.peers[member] = &peer{} // its heartbeat is read
	if got := m.relayedOwner(session); got != "" {
		t.Errorf("once the member is known: owner %q; want none (the member's own routing)", got)
	}
	other := "s-2"
	m.relayedFrom.add(other, token("src", other), "door-f")
	if got := m.relayedOwner(other); got != "door-f" {
		t.Errorf("a session certified to no member: owner %q; want door-f", got)
	}
}

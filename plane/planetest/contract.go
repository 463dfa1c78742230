package planetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
)

// Run runs the contract on planes that f makes: three front doors A, B
// and C of one plane each time.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		run  func(t *testing.T, doors []Door)
	}{
		{"EventsReachEveryDoor", eventsReachEveryDoor},
		{"SameOpenSetOnEveryDoor", sameOpenSetOnEveryDoor},
		{"AnswerOnOneDoorReachesTheAskingOne", answerAcrossDoors},
		{"RefusalsAndRejections", refusals},
		{"RedeliveredCommandGetsTheRecordedAck", redelivery},
		{"EndedSessionLeavesNoQuestion", sessionEnd},
		{"RosterOnEveryDoor", roster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, f(t, 3)) })
	}
}

// eventsReachEveryDoor: a question asked on C reaches A and B live, byte
// for byte, and a subscription made after starts with it.
func eventsReachEveryDoor(t *testing.T, doors []Door) {
	a, b := Subscribe(t, doors[0].Member.Hub()), Subscribe(t, doors[1].Member.Hub())
	s := NewSession(t, doors[2])
	id := s.Ask()
	local := Subscribe(t, doors[2].Member.Hub()).Until("the question on its own door", Is("attention.requested", id))
	for i, w := range []*Watch{a, b} {
		got := w.Until(fmt.Sprintf("the question on door %d", i), Is("attention.requested", id))
		if !bytes.Equal(got.Raw, local.Raw) {
			t.Errorf("door %d got the question as %s; want the asking door's bytes %s", i, got.Raw, local.Raw)
		}
	}
	if got := OpenIDs(doors[0].Member.Hub()); !slices.Equal(got, []string{id}) {
		t.Errorf("a new subscription on A starts with open questions %v; want [%s]", got, id)
	}
	started := a.Until("session.started", Is("session.started", ""))
	if started.Event.Session != s.ID() {
		t.Errorf("session.started of session %q; want %q", started.Event.Session, s.ID())
	}
}

// sameOpenSetOnEveryDoor: questions of two sessions on two doors are the
// same open set on all three.
func sameOpenSetOnEveryDoor(t *testing.T, doors []Door) {
	sb, sc := NewSession(t, doors[1]), NewSession(t, doors[2])
	want := map[string]bool{}
	for range 2 {
		want[sb.Ask()] = true
	}
	for range 3 {
		want[sc.Ask()] = true
	}
	for i, d := range doors {
		Eventually(t, fmt.Sprintf("door %d's open set", i), func() error { return SameOpen(d.Member.Hub(), want) })
	}
}

// answerAcrossDoors: an operator on A answers C's question; C's server
// gets the answer, A sees the ack and the resolution, and no door lists
// the question any more.
func answerAcrossDoors(t *testing.T, doors []Door) {
	a := Subscribe(t, doors[0].Member.Hub())
	s := NewSession(t, doors[2])
	id := s.Ask()
	a.Until("the question on A", Is("attention.requested", id))
	cmd, raw := Respond(s.ID(), id, map[string]any{"ok": true})
	if code, detail := doors[0].Member.Command(context.Background(), plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("Command = %s: %s; want the session's ack decision", code, detail)
	}
	a.Until("the ack on A", Is("control.accepted", cmd.ID))
	a.Until("the resolution on A", Is("attention.resolved", id))
	if got := s.Resolutions(id); len(got) != 1 || got[0].Outcome != attention.Answered {
		t.Fatalf("the asking session's server got %+v; want one answer", got)
	}
	for i, d := range doors {
		Eventually(t, fmt.Sprintf("door %d's open set", i), func() error { return SameOpen(d.Member.Hub(), nil) })
	}
}

// refusals: a command for no session, a principal without the answer
// right, and an invalid answer, which is rejected and leaves the
// question open everywhere.
func refusals(t *testing.T, doors []Door) {
	a := Subscribe(t, doors[0].Member.Hub())
	s := NewSession(t, doors[2])
	id := s.Ask()
	a.Until("the question on A", Is("attention.requested", id))
	ctx := context.Background()

	cmd, raw := Respond(doors[2].SessionID(), id, map[string]any{"ok": true}) // a session nobody runs
	if code, _ := doors[0].Member.Command(ctx, plane.TokenHolder(), cmd, raw); code != "no-route" {
		t.Errorf("a command for a session nobody runs got %q; want no-route", code)
	}
	cmd, raw = Respond(s.ID(), id, map[string]any{"ok": true})
	reader := plane.Principal{Name: "reader", Rights: []string{plane.RightRead}}
	if code, _ := doors[0].Member.Command(ctx, reader, cmd, raw); code != "unauthorized" {
		t.Errorf("a reader's command got %q; want unauthorized", code)
	}
	cmd, raw = Respond(s.ID(), id, map[string]any{"ok": "not a boolean"})
	if code, detail := doors[0].Member.Command(ctx, plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("an invalid answer got %s: %s; want the session's rejection", code, detail)
	}
	rej := a.Until("the rejection on A", Is("control.rejected", cmd.ID))
	if !bytes.Contains(rej.Event.Data, []byte(`"invalid"`)) {
		t.Errorf("rejection data %s; want reason invalid", rej.Event.Data)
	}
	if s.Pending() != 1 || len(s.Resolutions(id)) != 0 {
		t.Errorf("after an invalid answer the session waits on %d questions with %v; want the question still open", s.Pending(), s.Resolutions(id))
	}
	if got := OpenIDs(doors[0].Member.Hub()); !slices.Equal(got, []string{id}) {
		t.Errorf("A's open set after an invalid answer is %v; want [%s]", got, id)
	}
}

// redelivery: the same command sent again through another door gets the
// recorded ack again, byte for byte, and is not decided twice.
func redelivery(t *testing.T, doors []Door) {
	a, b := Subscribe(t, doors[0].Member.Hub()), Subscribe(t, doors[1].Member.Hub())
	s := NewSession(t, doors[2])
	id := s.Ask()
	a.Until("the question on A", Is("attention.requested", id))
	cmd, raw := Respond(s.ID(), id, map[string]any{"ok": true})
	ctx := context.Background()
	if code, detail := doors[0].Member.Command(ctx, plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("Command = %s: %s", code, detail)
	}
	first := b.Until("the ack on B", Is("control.accepted", cmd.ID))
	b.Until("the resolution on B", Is("attention.resolved", id))
	n := len(b.Seen())
	if code, detail := doors[1].Member.Command(ctx, plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("the same command again = %s: %s; want the recorded ack", code, detail)
	}
	again := b.After(n).Until("the ack again on B", Is("control.accepted", cmd.ID))
	if !bytes.Equal(again.Raw, first.Raw) {
		t.Errorf("the ack re-sent is %s; want the recorded one byte for byte: %s", again.Raw, first.Raw)
	}
	if got := s.Resolutions(id); len(got) != 1 {
		t.Errorf("the server got %d resolutions; want one", len(got))
	}
}

// sessionEnd: a session that ends with questions open leaves none open
// on any door.
func sessionEnd(t *testing.T, doors []Door) {
	a := Subscribe(t, doors[0].Member.Hub())
	s := NewSession(t, doors[2])
	s.Ask()
	s.Ask()
	s.End()
	ended := a.Until("session.ended on A", Is("session.ended", ""))
	if ended.Event.Session != s.ID() {
		t.Fatalf("session.ended of %q; want %q", ended.Event.Session, s.ID())
	}
	for i, d := range doors {
		Eventually(t, fmt.Sprintf("door %d's open set", i), func() error { return SameOpen(d.Member.Hub(), nil) })
	}
	cmd, raw := Respond(s.ID(), "01J0000000000000000000000", map[string]any{"ok": true})
	if code, _ := doors[0].Member.Command(context.Background(), plane.TokenHolder(), cmd, raw); code != "no-route" {
		t.Errorf("a command for an ended session got %q; want no-route", code)
	}
}

// roster: every door lists the sessions claimed on the plane, and not
// once they ended.
func roster(t *testing.T, doors []Door) {
	s := NewSession(t, doors[2])
	for i, d := range doors {
		Eventually(t, fmt.Sprintf("door %d's roster", i), func() error {
			for _, b := range d.Member.Sessions() {
				if b.Session == s.ID() && b.Source == s.Source() && slices.Contains(b.Accepts, "control.attention.respond") {
					return nil
				}
			}
			return fmt.Errorf("no session %s in %+v", s.ID(), d.Member.Sessions())
		})
	}
	s.End()
	for i, d := range doors {
		Eventually(t, fmt.Sprintf("door %d's roster without the ended session", i), func() error {
			for _, b := range d.Member.Sessions() {
				if b.Session == s.ID() {
					return fmt.Errorf("session %s still listed", s.ID())
				}
			}
			return nil
		})
	}
}

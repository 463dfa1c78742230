package natsplane

import (
	"context"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
)

// TestOwnerChecksTheScopeAgain: a named operator's command that a front
// door lets through (as a door with a stale identity document, or one
// that is not ours, would) is refused by the session's owner when the
// session's server is outside the operator's scope; in scope, it is
// taken, and the session records who answered.
func TestOwnerChecksTheScopeAgain(t *testing.T) {
	prefix := newPrefix()
	a, c := member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix)
	w := planetest.Subscribe(t, a.Hub())
	s := planetest.NewSession(t, door(c))
	id := s.Ask() // its server is "deployer"
	w.Until("the question on A", planetest.Is("attention.requested", id))
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()

	billing := plane.Principal{Name: "billing", Rights: []string{plane.RightRead, plane.RightAnswer}, Scopes: []string{"billing-*"}}
	cmd, raw := planetest.Respond(s.ID(), id, map[string]any{"ok": true})
	if code, detail := a.Command(ctx, billing, cmd, raw); code != "unauthorized" {
		t.Fatalf("billing's command for a deployer session: %q %q; want unauthorized from the owner", code, detail)
	}
	if got := s.Resolutions(id); len(got) != 0 {
		t.Fatalf("the session got %d resolutions from an operator out of scope", len(got))
	}

	ops := plane.Principal{Name: "ops", Rights: []string{plane.RightRead, plane.RightAnswer}, Scopes: []string{"deploy*"}}
	cmd, raw = planetest.Respond(s.ID(), id, map[string]any{"ok": true})
	if code, detail := a.Command(ctx, ops, cmd, raw); code != "" {
		t.Fatalf("ops's command: %s: %s; want it taken", code, detail)
	}
	w.Until("the resolution", planetest.Is("attention.resolved", id))
	if got := s.Resolutions(id); len(got) != 1 {
		t.Fatalf("the session got %d resolutions; want ops's one", len(got))
	}
}

package endpoint

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// refusedFor fails the test unless fr is an unauthorized error frame for
// the event id whose detail contains want.
func refusedFor(t *testing.T, what string, fr map[string]any, id, want string) {
	t.Helper()
	if fr == nil || fr["code"] != "unauthorized" || fr["cause"] != id || !strings.Contains(fr["detail"].(string), want) {
		t.Fatalf("%s: %v; want unauthorized for %s saying %q", what, fr, id, want)
	}
}

// TestAJoinedBridgesSessionWaitsForItWithNothingOpen: a joined bridge's
// session and its source are bound to the resume secret of the connection
// that first wrote them, for as long as the session is remembered, open
// questions or not. While the bridge's link is down with nothing open, a
// token holder through /join (with the bridge's public agent and instance)
// or /socket, or a POST, cannot write under its source, in its session or
// another, so it cannot raise fake questions there; the bridge, back with
// its secret, writes on.
func TestAJoinedBridgesSessionWaitsForItWithNothingOpen(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	srv, hub := f.srv, f.hub
	const src = "aep://vm/agent/b/session/SB"
	bridge, secret := joinResuming(t, srv, "host-b/1", "")
	if fr := bridge.sendEvent(remoteEvent(src, "SB", "S", "session.started", "", 0)); fr != nil {
		t.Fatalf("the bridge's session.started: %v", fr)
	}
	bridge.c.Close()
	<-f.released

	evil, _ := joinResuming(t, srv, "host-b/1", "")
	refusedFor(t, "a token holder through /join, in the bridge's session under its source",
		evil.sendEvent(remoteEvent(src, "SB", "X1", "attention.requested", "srv", 1)), "X1", "resume secret")
	refusedFor(t, "a token holder through /join, under the bridge's source in another session",
		evil.sendEvent(remoteEvent(src, "SC", "X2", "attention.requested", "srv", 0)), "X2", "whose link is down")
	socket := emitterConn(t, srv, "host-b/1")
	refusedFor(t, "a /socket emitter in the bridge's session under its source",
		socket.sendEvent(remoteEvent(src, "SB", "X3", "attention.requested", "srv", 1)), "X3", "joined to this hub")
	if code, body := post(t, srv.URL, "application/json", remoteEvent(src, "SB", "X4", "attention.requested", "srv", 1)); code != http.StatusForbidden {
		t.Fatalf("POST in the bridge's session under its source: %d %+v; want 403", code, body)
	}
	if n := hub.Stats().Open; n != 0 {
		t.Fatalf("%d open; want no fake question in the bridge's session", n)
	}

	back, _ := joinResuming(t, srv, "host-b/1", secret)
	if fr := back.sendEvent(remoteEvent(src, "SB", "Q", "attention.requested", "srv", 1)); fr != nil {
		t.Fatalf("the bridge back with its secret: %v; want its question accepted", fr)
	}
	if n := hub.Stats().Open; n != 1 {
		t.Fatalf("%d open; want the bridge's question", n)
	}
	op := dial(t, srv)
	op.hello()
	if fr := op.sendEvent(`{"aep":"0.1","id":"C1","type":"control.attention.respond","subject":"Q","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":"SB","data":{"answer":{"option":"decline"}}}`); fr != nil {
		t.Fatalf("an operator's answer: %v; want it routed to the bridge", fr)
	}
	if cmd := back.read(); cmd["id"] != "C1" {
		t.Fatalf("the bridge got %v; want the command C1", cmd)
	}
}

// TestAJoinedBridgesHoldIsBounded: what a joined bridge's source is held
// for lasts as long as its session is among the retiredJoined most
// recently left: once the session is forgotten, its source (with nothing
// open) is free again, so the holds cannot grow without bound.
func TestAJoinedBridgesHoldIsBounded(t *testing.T) {
	f := newFixture(t, bus.HubOptions{ReplayPerSession: 1, ReplaySessions: 1}, Options{})
	const src = "aep://vm/agent/b/session/SB"
	bridge := joinConn(t, f.srv, "host-b/1")
	if fr := bridge.sendEvent(remoteEvent(src, "SB", "S", "session.started", "", 0)); fr != nil {
		t.Fatalf("the bridge's session.started: %v", fr)
	}
	bridge.c.Close()
	<-f.released
	other := joinConn(t, f.srv, "host-o/1")
	for i := range retiredJoined {
		other.send(remoteEvent(fmt.Sprintf("aep://o/agent/b/session/O%d", i), fmt.Sprintf("O%d", i), fmt.Sprintf("E%d", i), "session.started", "", 0))
	}
	if fr := other.sendEvent(remoteEvent(src, "SC", "X0", "session.started", "", 0)); fr == nil {
		t.Fatal("the bridge's source while its session is remembered: accepted; want it refused")
	}
	other.c.Close()
	<-f.released
	late := joinConn(t, f.srv, "host-l/1")
	if fr := late.sendEvent(remoteEvent(src, "SC", "X1", "session.started", "", 0)); fr != nil {
		t.Fatalf("the source after %d joined sessions retired since its own: %v; want it free", retiredJoined, fr)
	}
	f.ep.mu.Lock()
	defer f.ep.mu.Unlock()
	// The retired sessions' sources and the live one.
	if n, m := len(f.ep.joinedSessions), len(f.ep.sources); n != retiredJoined+1 || m != retiredJoined+1 {
		t.Fatalf("%d joined sessions and %d sources remembered; want %d of each", n, m, retiredJoined+1)
	}
}

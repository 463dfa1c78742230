package endpoint

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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

// answerReaches sends an operator's answer to question in session, as
// command id, and fails the test unless it is routed to emitter.
func answerReaches(t *testing.T, srv *httptest.Server, emitter *wsClient, session, question, id string) {
	t.Helper()
	op := dial(t, srv)
	op.hello()
	cmd := fmt.Sprintf(`{"aep":"0.1","id":%q,"type":"control.attention.respond","subject":%q,"time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":%q,"data":{"answer":{"option":"decline"}}}`,
		id, question, session)
	if fr := op.sendEvent(cmd); fr != nil {
		t.Fatalf("an operator's answer to %s: %v; want it routed", question, fr)
	}
	if got := emitter.read(); got["id"] != id {
		t.Fatalf("the emitter got %v; want the command %s", got, id)
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
	answerReaches(t, srv, back, "SB", "Q", "C1")
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
	// The retired sessions' sources and the live one.
	if st := f.ep.access.Stats(); st.JoinedSessions != retiredJoined+1 || st.Sources != retiredJoined+1 {
		n, m := st.JoinedSessions, st.Sources
		t.Fatalf("%d joined sessions and %d sources remembered; want %d of each", n, m, retiredJoined+1)
	}
}

// openIDs lists the ids of the questions the hub holds open.
func openIDs(t *testing.T, hub *bus.Hub) []string {
	t.Helper()
	sub, _ := hub.SubscribeFrom(nil, bus.From{}, 1)
	defer sub.Close()
	var ids []string
	for d := range sub.Backlog() {
		ids = append(ids, d.Event.ID)
	}
	return ids
}

// TestAJoinedBridgeTakesItsSourceFromASocketSquatter: a /socket token
// holder that writes a bridge's (public) source and session before the
// bridge joins, and leaves questions there, live or gone, neither keeps
// the bridge out nor keeps the source: the bridge's first event takes the
// session and its source (a joined bridge beats /socket), what the
// squatter left open there is no longer listed, operators' commands reach
// the bridge, and the squatter may not write the source or the session
// again, even presenting its own secret.
func TestAJoinedBridgeTakesItsSourceFromASocketSquatter(t *testing.T) {
	tests := []struct {
		name  string
		leave bool // the squatter disconnects before the bridge joins
	}{
		{"squatter still connected", false},
		{"squatter gone with its questions open", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, bus.HubOptions{}, Options{})
			srv, hub := f.srv, f.hub
			const src = "aep://vm/agent/b/session/SB"
			squatter, secret := emitterResuming(t, srv, "evil", "")
			for _, ev := range []string{
				remoteEvent(src, "SB", "X0", "attention.requested", "srv", 0),
				remoteEvent("aep://evil/agent/e", "SB", "X1", "attention.requested", "srv", 0),
			} {
				if fr := squatter.sendEvent(ev); fr != nil {
					t.Fatalf("the squatter's question: %v", fr)
				}
			}
			if tt.leave {
				squatter.c.Close()
				<-f.released
				squatter, _ = emitterResuming(t, srv, "evil", secret)
			}
			bridge := joinConn(t, srv, "host-b/1")
			if fr := bridge.sendEvent(remoteEvent(src, "SB", "B0", "attention.requested", "srv", 1)); fr != nil {
				t.Fatalf("the bridge's question in its own session: %v; want it accepted", fr)
			}
			if got := openIDs(t, hub); len(got) != 1 || got[0] != "B0" {
				t.Fatalf("open %q; want the bridge's question only", got)
			}
			refusedFor(t, "the squatter in the bridge's session under its source",
				squatter.sendEvent(remoteEvent(src, "SB", "X2", "attention.resolved", "X0", 2)), "X2", "joined to this hub")
			refusedFor(t, "the squatter under the bridge's source in another session",
				squatter.sendEvent(remoteEvent(src, "SZ", "X3", "attention.requested", "srv", 0)), "X3", "another live connection")
			answerReaches(t, srv, bridge, "SB", "B0", "C1")
		})
	}
}

// TestAnEmitterTakesOverFromItsOldConnectionStillLive: an emitter whose
// link reconnects before the hub noticed that the old connection died
// (half-open TCP: it looks live for up to pongWait) presents its resume
// secret and writes on at once: its re-announced question, a new one and
// a resolution are accepted; what the old connection wrote (sources,
// sessions, claims, in sessions the new one has not written yet too) is
// the new one's; the old connection is closed, and its teardown leaves the
// new one's state alone. A /socket connection presenting a joined
// bridge's secret takes nothing.
func TestAnEmitterTakesOverFromItsOldConnectionStillLive(t *testing.T) {
	tests := []struct {
		name    string
		connect func(t *testing.T, srv *httptest.Server, instance, secret string) (*wsClient, string)
		joined  bool
	}{
		{"a bridge through /join", joinResuming, true},
		{"an emitter through /socket", emitterResuming, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, bus.HubOptions{}, Options{})
			srv, hub := f.srv, f.hub
			const srcB, srcC = "aep://vm/agent/b/session/SB", "aep://vm/agent/b/session/SC"
			old, secret := tt.connect(t, srv, "host-b/1", "")
			for _, ev := range []string{
				remoteEvent(srcB, "SB", "Q", "attention.requested", "srv", 0),
				remoteEvent(srcC, "SC", "S", "session.started", "", 0),
			} {
				if fr := old.sendEvent(ev); fr != nil {
					t.Fatalf("the old connection's event: %v", fr)
				}
			}
			if tt.joined {
				sock, _ := emitterResuming(t, srv, "host-b/1", secret)
				refusedFor(t, "the bridge's secret through /socket", sock.sendEvent(remoteEvent(srcB, "SB", "X1", "progress.status", "", 1)), "X1", "joined to this hub")
				if fr := old.sendEvent(remoteEvent(srcB, "SB", "P", "progress.status", "", 1)); fr != nil {
					t.Fatalf("the bridge after its secret was tried through /socket: %v; want it still writing", fr)
				}
			}

			back, kept := tt.connect(t, srv, "host-b/1", secret)
			if kept != secret {
				t.Fatal("the endpoint gave the reconnecting emitter a new secret; want the one it presented kept")
			}
			for _, ev := range []string{
				remoteEvent(srcB, "SB", "Q", "attention.requested", "srv", 0),
				remoteEvent(srcB, "SB", "Q2", "attention.requested", "srv", 2),
				remoteEvent(srcB, "SB", "R", "attention.resolved", "Q", 3),
			} {
				if fr := back.sendEvent(ev); fr != nil {
					t.Fatalf("the reconnected emitter's event while its old connection looks live: %v; want it accepted", fr)
				}
			}
			if got := openIDs(t, hub); len(got) != 1 || got[0] != "Q2" {
				t.Fatalf("open %q; want Q settled and Q2 open", got)
			}

			closing := false
			old.c.SetReadDeadline(deadline())
			for {
				_, b, err := old.c.ReadMessage()
				if err != nil {
					break
				}
				closing = closing || strings.Contains(string(b), `"type":"closing"`)
			}
			if !closing {
				t.Fatal("the old connection ended without a closing frame; want it closed in order")
			}
			<-f.released // the old connection's teardown

			answerReaches(t, srv, back, "SC", "S", "C1")
			answerReaches(t, srv, back, "SB", "Q2", "C2")
			if fr := back.sendEvent(remoteEvent(srcC, "SC", "S2", "progress.status", "", 1)); fr != nil {
				t.Fatalf("the new connection under the old one's other source: %v; want it accepted", fr)
			}
			other, _ := tt.connect(t, srv, "host-b/1", "")
			if fr := other.sendEvent(remoteEvent(srcC, "SZ", "X2", "progress.status", "", 0)); fr == nil || fr["code"] != "unauthorized" {
				t.Fatalf("another connection under the emitter's source after the old one's teardown: %v; want unauthorized", fr)
			}

			back.c.Close()
			<-f.released
			again, _ := tt.connect(t, srv, "host-b/1", secret)
			if fr := again.sendEvent(remoteEvent(srcB, "SB", "R2", "attention.resolved", "Q2", 4)); fr != nil {
				t.Fatalf("the emitter back once more: %v; want its resolution accepted", fr)
			}
			if n := hub.Stats().Open; n != 0 {
				t.Fatalf("%d open; want none", n)
			}
		})
	}
}

// TestASessionNamedAfterAKeyIsItsBridgesOnAnyHub: a session whose id is
// certified to a bridge's session key, and a source that names it, are
// written only by a /join connection that proved the key, on a hub that
// never saw the bridge (one restarted since, say) as much as on the
// hub it joined first: a token holder through /socket, /join or POST is
// refused even when it comes first, and the bridge then writes its
// session, and gets its commands, as if nobody had tried.
func TestASessionNamedAfterAKeyIsItsBridgesOnAnyHub(t *testing.T) {
	key, other := newProofKey(t), newProofKey(t)
	session := key.SessionID("01J9ZQ3V8Y6S9Q7W5X4R2T1M0N")
	src := "aep://vm/agent/b/session/" + session
	f := newFixture(t, bus.HubOptions{}, Options{})
	srv, hub := f.srv, f.hub

	keyless, _ := joinResuming(t, srv, "host-b/1", "")
	wrongKey, _ := joinWith(t, srv, "host-b/1", "", other)
	socket := emitterConn(t, srv, "host-b/1")
	for i, tc := range []struct {
		name string
		c    *wsClient
		ev   string
		want string
	}{
		{"through /join without the key, in its session under its source", keyless, remoteEvent(src, session, "X1", "session.started", "", 0), "named after a bridge's session key"},
		{"through /join with another key", wrongKey, remoteEvent(src, session, "X2", "attention.requested", "srv", 0), "named after a bridge's session key"},
		{"through /socket", socket, remoteEvent(src, session, "X3", "attention.requested", "srv", 0), "named after a bridge's session key"},
		{"its session under another source", keyless, remoteEvent("aep://evil/agent/e", session, "X4", "session.started", "", 0), "named after a bridge's session key"},
		{"its source in another session", keyless, remoteEvent(src, "elsewhere", "X5", "attention.requested", "srv", 0), "names a session of a bridge's session key"},
	} {
		refusedFor(t, tc.name, tc.c.sendEvent(tc.ev), fmt.Sprintf("X%d", i+1), tc.want)
	}
	if code, body := post(t, srv.URL, "application/json", remoteEvent(src, session, "X9", "attention.requested", "srv", 0)); code != http.StatusForbidden || !strings.Contains(body.Detail, "session key") {
		t.Fatalf("POST into the session: %d %+v; want 403 naming the session key", code, body)
	}
	if n := hub.Stats().Open; n != 0 {
		t.Fatalf("%d open; want no impostor's question", n)
	}

	bridge, _ := joinWith(t, srv, "host-b/1", "", key)
	for i, typ := range []string{"session.started", "attention.requested"} {
		if fr := bridge.sendEvent(remoteEvent(src, session, fmt.Sprintf("B%d", i), typ, "srv", i)); fr != nil {
			t.Fatalf("the bridge that proved the key, its %s: %v", typ, fr)
		}
	}
	answerReaches(t, srv, bridge, session, "B1", "C1")
}

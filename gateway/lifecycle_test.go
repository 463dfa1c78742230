package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// sessionOf waits for the AEP session whose client is name.
func (w *watcher) sessionOf(t *testing.T, name string) string {
	t.Helper()
	var id string
	w.waitFor(t, "the session of "+name, func(w *watcher) bool {
		for s, c := range w.clients {
			if c == name {
				id = s
				return true
			}
		}
		return false
	})
	return id
}

// TestDeleteEndsTheSession: DELETE ends the session and its upstream;
// the session id is then unknown.
func TestDeleteEndsTheSession(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	w := g.watch()
	c := rawSession(t, g, "deleted", false)
	aepSession := w.sessionOf(t, "deleted")
	if code, _ := status(t, g.request(t, "DELETE", "/mcp", c.header(), "")); code != http.StatusNoContent {
		t.Fatalf("DELETE: got %d; want 204", code)
	}
	// DELETE answers once the bridge session returned: session.ended is
	// written and the upstream is stopped.
	w.waitFor(t, "session.ended", func(w *watcher) bool { return w.ended[aepSession] == "normal" })
	if code, msg := status(t, c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); code != http.StatusNotFound {
		t.Errorf("a request after DELETE: got %d %q; want 404", code, msg)
	}
	if n := g.srv.Sessions(); n != 0 {
		t.Errorf("live sessions: got %d; want 0", n)
	}
}

// TestIdleExpiry: a session nobody uses ends after --session-idle; one
// with a request in flight (a question waiting for a human) does not.
// Neither depends on how soon a client sends its next request: the
// busy session is a stateless request's, in flight from its start, and
// the idle one is opened by initialize alone.
func TestIdleExpiry(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), SessionIdle: 300 * time.Millisecond})
	w := g.watch()
	busy := &modern{t: t, g: g, name: "busy"}
	result := busy.start(context.Background(), `7`, "mrtr-ask", nil)
	q := w.question(t, "Who deploys?")
	idle := &raw{t: t, g: g}
	resp := idle.post(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
	idle.id = resp.Header.Get(mcp.HeaderSessionID)
	resp.Body.Close()
	if idle.id == "" {
		t.Fatalf("initialize: no Mcp-Session-Id (status %s)", resp.Status)
	}
	idleSession := w.sessionOf(t, "idle")
	w.waitFor(t, "the idle session to end", func(w *watcher) bool { return w.ended[idleSession] != "" })
	if code, _ := status(t, idle.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); code != http.StatusNotFound {
		t.Errorf("a request after idle expiry: got %d; want 404", code)
	}
	// The busy session went quiet before the idle one started, and lives:
	// its request is in flight.
	w.mu.Lock()
	_, ended := w.ended[q.Session]
	w.mu.Unlock()
	if ended {
		t.Fatal("the session with a request in flight expired")
	}
	g.answer(t, q, aep.Answer{Values: map[string]any{"who": "still-here"}})
	if p := outcome(t, "the busy session's call", result); !strings.Contains(p.answer, "still-here") {
		t.Errorf("the busy session's call: got %q (%v); want the operator's answer", p.answer, p.err)
	}
}

// TestDeadUpstreamFailsOnlyItsSession: one session's server exits; its
// in-flight request gets an error naming the exit, its session ends, and
// the other session goes on.
func TestDeadUpstreamFailsOnlyItsSession(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	w := g.watch()
	doomed := rawSession(t, g, "doomed", false)
	other := rawSession(t, g, "other", false)
	doomedSession := w.sessionOf(t, "doomed")
	got := readAll(t, doomed.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"crash","arguments":{"code":3}}}`))
	if len(got) != 1 || !strings.Contains(got[0], `"error"`) || !strings.Contains(got[0], "exit") {
		t.Errorf("the crashing call: got %v; want an error naming the exit", got)
	}
	w.waitFor(t, "the doomed session to end", func(w *watcher) bool { return w.ended[doomedSession] == "error" })
	g.waitSessions(t, 1)
	if code, _ := status(t, doomed.post(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)); code != http.StatusNotFound {
		t.Errorf("the dead session: got %d; want 404", code)
	}
	echo := readAll(t, other.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"alive"}}}`))
	if len(echo) != 1 || !strings.Contains(echo[0], `"text":"alive"`) {
		t.Errorf("the other session: got %v; want its echo", echo)
	}
}

// TestCloseKillsAnUpstreamThatIgnoresTERM: Close returns even when a
// session's upstream ignores its closed stdin and SIGTERM, because the
// stop escalates to SIGKILL (Session.StopGrace, then KillTimeout).
func TestCloseKillsAnUpstreamThatIgnoresTERM(t *testing.T) {
	var stderr testenv.Buffer
	o := sessionOpts(elicit.RouteRemote)
	o.Command = []string{"sh", "-c", `trap "" TERM; echo "ready $$" >&2; exec sleep 1000`}
	o.ServerStderr = &stderr
	g := startGateway(t, Options{Session: o})
	if _, err := g.srv.newSession(context.Background(), stateful, anonymous, nil); err != nil {
		t.Fatal(err)
	}
	stderr.WaitFor(t, "ready ", waitLimit) // the trap is set
	var pid int
	if _, err := fmt.Sscanf(stderr.String(), "ready %d", &pid); err != nil {
		t.Fatalf("reading the upstream's pid from %q: %v", stderr.String(), err)
	}
	closed := make(chan error, 1)
	go func() { closed <- g.srv.Close(context.Background()) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("Close did not return within %v: the upstream that ignores SIGTERM was never killed", waitLimit)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("signalling the upstream (pid %d) after Close: got %v; want ESRCH (it is gone)", pid, err)
	}
}

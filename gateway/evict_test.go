package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// initAs POSTs initialize as name and returns the response's status and
// error message, and the client (with its session id) when it got one.
func initAs(t *testing.T, g *gw, name string) (*raw, int, string) {
	t.Helper()
	c := &raw{t: t, g: g}
	resp := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`, name))
	if resp.StatusCode != http.StatusOK {
		code, msg := status(t, resp)
		return nil, code, msg
	}
	c.id = resp.Header.Get(mcp.HeaderSessionID)
	readAll(t, resp)
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: initialized got %s; want 202", name, r.Status)
	}
	return c, http.StatusOK, ""
}

// echo calls the echo tool in c's session and checks its answer.
func (c *raw) echo(message string) {
	c.t.Helper()
	got := readAll(c.t, c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, message)))
	if len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf(`"text":%q`, message)) {
		c.t.Fatalf("echo %q: got %v", message, got)
	}
}

// TestAbandonedSessionsMakeRoom is issue 21 item 7: 200 short-lived
// clients in a row each open a session, call a tool and leave without
// DELETE (as the inspector CLI, Mastra and LangChain do), against a
// gateway that serves 4 sessions. None gets 503: the least recently used
// idle session is ended to make room, so at most 4 servers run.
func TestAbandonedSessionsMakeRoom(t *testing.T) {
	t.Parallel()
	const clients, max = 200, 4
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), MaxSessions: max})
	for i := range clients {
		name := fmt.Sprintf("short-lived-%03d", i)
		c, code, msg := initAs(t, g, name)
		if code != http.StatusOK {
			t.Fatalf("client %d of %d: initialize got %d %q; want a session", i+1, clients, code, msg)
		}
		c.echo(name)
		if n := g.srv.Sessions(); n > max {
			t.Fatalf("after client %d: %d sessions live; want at most %d", i+1, n, max)
		}
	}
}

// TestOnlyIdleSessionsMakeRoom: at --max-sessions, the session ended to
// make room is the least recently used idle one (not the oldest), never
// one with a request in flight or a question open; when every session is
// busy, a new one gets 503.
func TestOnlyIdleSessionsMakeRoom(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), MaxSessions: 3})
	w := g.watch()
	busy, _, _ := initAs(t, g, "busy")
	asked := make(chan []string, 1)
	go func() {
		asked <- readAll(t, busy.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{"message":"Busy one?"}}}`))
	}()
	q := w.question(t, "Busy one?")
	older, _, _ := initAs(t, g, "older")
	newer, _, _ := initAs(t, g, "newer")
	older.echo("older is used last") // newer is now the least recently used idle session
	newcomer, code, msg := initAs(t, g, "newcomer")
	if code != http.StatusOK {
		t.Fatalf("a fourth client with an idle session to spare: got %d %q; want a session", code, msg)
	}
	newcomer.echo("in")
	if code, _ := status(t, newer.post(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)); code != http.StatusNotFound {
		t.Errorf("the least recently used idle session: got %d; want 404 (ended to make room)", code)
	}
	older.echo("still here")
	newerSession := w.sessionOf(t, "newer")
	w.waitFor(t, "the ended session's session.ended", func(w *watcher) bool { return w.ended[newerSession] != "" })

	// Every session busy: the next client gets 503, and nothing is ended.
	var calls []chan []string
	for _, c := range []*raw{older, newcomer} {
		ch := make(chan []string, 1)
		calls = append(calls, ch)
		go func() {
			ch <- readAll(t, c.post(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ask","arguments":{"message":"Hold on?"}}}`))
		}()
	}
	w.waitFor(t, "three open questions", func(w *watcher) bool { return len(w.questions) == 3 })
	resp := (&raw{t: t, g: g}).post(initBody)
	if code, msg := status(t, resp); code != http.StatusServiceUnavailable || !strings.Contains(msg, "busy") {
		t.Errorf("a client while every session is busy: got %d %q; want 503 saying every session is busy", code, msg)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
	g.answer(t, q, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	if got := <-asked; len(got) != 1 || !strings.Contains(got[0], `\"environment\":\"staging\"`) {
		t.Errorf("the busy session's call: got %v; want the operator's answer", got)
	}
	w.mu.Lock()
	open := append([]*aep.Event(nil), w.questions[1:]...)
	w.mu.Unlock()
	for _, q := range open {
		g.answer(t, q, answerCancel)
	}
	for _, ch := range calls {
		if got := <-ch; len(got) != 1 || !strings.Contains(got[0], `\"action\":\"cancel\"`) {
			t.Errorf("a held call: got %v; want the operator's cancel", got)
		}
	}
}

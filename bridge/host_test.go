package bridge

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func newTestHost(t *testing.T, o HostOptions) *Host {
	t.Helper()
	h, err := NewHost(o)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func loopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestHostServesASessionAndClosesInOrder runs a session on a host with an
// endpoint: an operator on the endpoint answers its question; then Close,
// with a second question pending, ends the session first (the question is
// dismissed, session.ended reaches the operator) and the endpoint last.
func TestHostServesASessionAndClosesInOrder(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, HostOptions{Listener: loopback(t), Token: "host-token", Agent: "hosted"})
	s := startSession(t, sessionConfig{host: h})
	op := connectOperatorWith(t, h.Addr(), "host-token")

	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := op.question(nil)
	if req.Agent != "hosted" || req.Session != s.b.Session() {
		t.Fatalf("question from agent %q session %q; want hosted, %s", req.Agent, req.Session, s.b.Session())
	}
	op.answer(req, aep.Answer{Option: "decline"})
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" {
		t.Fatalf("server got %v; want decline", got)
	}

	resp, err := http.Get("http://" + h.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(health), `"upstream":"running"`) {
		t.Fatalf("healthz %s; want the session's upstream running", health)
	}

	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	pending := op.question(func(m map[string]any) bool { return m["id"] != req.ID })
	if err := h.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-s.runErr; err != nil {
		t.Fatalf("Run after Close: %v", err)
	}
	s.closed = true
	op.until(func(m map[string]any) bool {
		return m["type"] == "attention.resolved" && m["subject"] == pending.ID && strings.Contains(mustJSON(m["data"]), "dismissed")
	})
	op.until(func(m map[string]any) bool { return m["type"] == "session.ended" })
	op.until(func(m map[string]any) bool { return m["type"] == aep.FrameClosing })
	s.checkLog()
	if _, err := h.NewSession(Options{Command: []string{serverBin}}); err == nil {
		t.Fatal("NewSession after Close succeeded; want a refusal")
	}
}

// TestHostJoinsTheEndpointOnItsPort starts a second host on the port the
// first serves: it joins as an emitter, and its session's question is
// answered on the first host's endpoint.
func TestHostJoinsTheEndpointOnItsPort(t *testing.T) {
	t.Parallel()
	a := newTestHost(t, HostOptions{Listen: "127.0.0.1:0", Token: "hub-token", Agent: "first"})
	b := newTestHost(t, HostOptions{Listen: a.Addr(), Token: "hub-token", Agent: "second"})
	if b.Joined() == "" || b.Addr() != "" {
		t.Fatalf("second host: joined %q, addr %q; want it to join %s", b.Joined(), b.Addr(), a.Addr())
	}
	s := startSession(t, sessionConfig{host: b})
	op := connectOperatorWith(t, a.Addr(), "hub-token")
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := op.question(func(m map[string]any) bool { return m["agent"] == "second" })
	op.answer(req, aep.Answer{Option: "cancel"})
	if got := elicitResult(t, s.result(call)); got["action"] != "cancel" {
		t.Fatalf("server got %v; want cancel", got)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestHostCloseSendsWhatSessionsEmitLastThroughTheLink closes a joined
// host with a question pending, several times: the hub always sees the
// question dismissed and the session ended, because the links stop only
// after the sessions did.
func TestHostCloseSendsWhatSessionsEmitLastThroughTheLink(t *testing.T) {
	t.Parallel()
	hub := newTestHost(t, HostOptions{Listen: "127.0.0.1:0", Token: "hub-token", Agent: "hub"})
	op := connectOperatorWith(t, hub.Addr(), "hub-token")
	for i := range 5 {
		joined, err := NewHost(HostOptions{Listen: hub.Addr(), Token: "hub-token", Agent: "joined"})
		if err != nil {
			t.Fatalf("round %d: NewHost: %v", i, err)
		}
		s := startSession(t, sessionConfig{host: joined})
		s.call("ask", map[string]any{"schema": "pinned"}, nil)
		req := op.question(func(m map[string]any) bool { return m["session"] == s.b.Session() })
		if err := joined.Close(context.Background()); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		s.closed = true
		op.until(func(m map[string]any) bool {
			return m["type"] == "attention.resolved" && m["subject"] == req.ID
		})
		op.until(func(m map[string]any) bool { return m["type"] == "session.ended" && m["session"] == s.b.Session() })
	}
}

// TestHostCloseEndsLiveStreams: a live SSE subscriber does not hold Close
// up; its stream ends.
func TestHostCloseEndsLiveStreams(t *testing.T) {
	t.Parallel()
	h, err := NewHost(HostOptions{Listener: loopback(t), Token: "host-token"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+h.Addr()+"/stream", nil)
	req.Header.Set("Authorization", "Bearer host-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.Close(ctx); err != nil {
		t.Fatalf("Close with a live stream: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
}

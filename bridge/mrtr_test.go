package bridge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func TestMRTRModernClientSeesOnlyTheFinalResult(t *testing.T) {
	t.Parallel()
	s, logs := modern(t)
	call := s.call("mrtr-ask", map[string]any{"rounds": 1}, nil)
	req := s.next("attention.requested")
	if res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"who": "ada"}}); !res.Accepted() {
		t.Fatalf("answer: %s", res.Raw)
	}
	res := s.result(call)
	if res.IsError || toolText(t, res) != `{"action":"accept","content":{"who":"ada"}}` {
		t.Fatalf("the client got %+v", res)
	}
	if !strings.Contains(logs.String(), "multi round-trip: retrying") {
		t.Fatalf("the exchange did not go through input_required:\n%s", logs.String())
	}
}

func TestMRTRTwoRounds(t *testing.T) {
	t.Parallel()
	s, logs := modern(t)
	call := s.call("mrtr-ask", map[string]any{"rounds": 2}, nil)
	first := s.next("attention.requested")
	s.respond(first.ID, aep.Answer{Values: map[string]any{"who": "ada"}})
	second := s.next("attention.requested")
	if second.ID == first.ID {
		t.Fatal("the second round raised no new question")
	}
	s.respond(second.ID, aep.Answer{Values: map[string]any{"ok": true}})
	text := toolText(t, s.result(call))
	if !strings.Contains(text, `"confirm":{"action":"accept","content":{"ok":true}}`) || !strings.Contains(text, `round-2:`) {
		t.Fatalf("the client got %s; want the second round's answer and the echoed requestState", text)
	}
	if strings.Count(logs.String(), "multi round-trip: retrying") != 2 {
		t.Fatalf("want two retries:\n%s", logs.String())
	}
}

func TestMRTRLegacyClientNeverSeesInputRequired(t *testing.T) {
	t.Parallel()
	var logs lockedWriter
	s := startSession(t, sessionConfig{opts: Options{Logger: textLogger(&logs)}}) // pinned to 2025-11-25
	call := s.call("mrtr-ask", map[string]any{"rounds": 1}, nil)
	req := s.next("attention.requested")
	s.respond(req.ID, aep.Answer{Values: map[string]any{"who": "bob"}})
	if got := toolText(t, s.result(call)); got != `{"action":"accept","content":{"who":"bob"}}` {
		t.Fatalf("the client got %s", got)
	}
	if strings.Contains(logs.String(), "multi round-trip") {
		t.Fatal("a 2025-11-25 session went through input_required")
	}
}

// modern starts a session whose mcp-go client negotiates MCP 2026-07-28
// and answers no elicitation itself.
func modern(t *testing.T) (*session, *lockedWriter) {
	t.Helper()
	logs := &lockedWriter{}
	s := startSession(t, sessionConfig{opts: Options{Logger: textLogger(logs)}, protocol: mcp.ProtocolVersion20260728})
	if v := s.client.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("the client negotiated %q through the bridge; want 2026-07-28", v)
	}
	return s, logs
}

// TestMRTRClientRaceClientWins gives a 2026-07-28 client that answers
// elicitation itself the input_required too (route both): it answers first,
// its retry reaches the server, and the bus records the answer as given in
// the client.
func TestMRTRClientRaceClientWins(t *testing.T) {
	t.Parallel()
	handler := elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "accept", Content: map[string]any{"who": "from-the-ide"}}}, nil
	}}
	s := startSession(t, sessionConfig{protocol: mcp.ProtocolVersion20260728, clientOpts: []client.ClientOption{client.WithElicitationHandler(handler)}})
	call := s.call("mrtr-ask", map[string]any{"rounds": 1}, nil)
	s.next("attention.requested")
	if got := toolText(t, s.result(call)); got != `{"action":"accept","content":{"who":"from-the-ide"}}` {
		t.Fatalf("the server got %s", got)
	}
	answered := s.next("attention.answered")
	if !strings.Contains(string(answered.Data), `"via":"oob"`) {
		t.Fatalf("answered: %s", answered.Data)
	}
}

// TestMRTRRoundBound stops a server that never has enough input after the
// bound, with a clear error to the client.
func TestMRTRRoundBound(t *testing.T) {
	t.Parallel()
	s, _ := modern(t)
	call := s.call("mrtr-forever", nil, nil)
	for i := 0; i < 8; i++ {
		req := s.next("attention.requested")
		s.respond(req.ID, aep.Answer{Values: map[string]any{"ok": true}})
	}
	select {
	case r := <-call:
		if r.err == nil || !strings.Contains(r.err.Error(), "more than 8 times") {
			t.Fatalf("got %v %v; want an error naming the bound", r.res, r.err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the exchange never ended")
	}
}

// TestMRTRClientRaceOperatorWins: the operator answers while the client
// still holds its copy; the bridge completes the exchange, and the
// client's own retry, when it comes, is answered with that result.
func TestMRTRClientRaceOperatorWins(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	handler := elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		<-release
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "decline"}}, nil
	}}
	var logs lockedWriter
	s := startSession(t, sessionConfig{protocol: mcp.ProtocolVersion20260728, opts: Options{Logger: textLogger(&logs)},
		clientOpts: []client.ClientOption{client.WithElicitationHandler(handler)}})
	call := s.call("mrtr-ask", map[string]any{"rounds": 1}, nil)
	req := s.next("attention.requested")
	if res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"who": "operator"}}); !res.Accepted() {
		t.Fatalf("operator: %s", res.Raw)
	}
	logs.waitFor(t, "multi round-trip: retrying")
	close(release) // the client's late retry
	if got := toolText(t, s.result(call)); got != `{"action":"accept","content":{"who":"operator"}}` {
		t.Fatalf("the client got %s; want the operator's answer", got)
	}
}

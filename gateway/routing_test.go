package gateway

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// elicitingHTTPServer is an mcp-go streamable HTTP server whose ask tool
// elicits while its call is in flight, so the question travels on the
// call's response stream.
func elicitingHTTPServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("http-eliciter", "1.0.0", server.WithElicitation(),
		//lint:ignore SA1019 this peer tests the 2025 flow (elicitation/create requests on the call's stream)
		server.WithLegacyServerInitiatedRequests())
	s.AddTool(mcp.NewTool("ask", mcp.WithString("message")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: r.GetString("message", ""),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		b, _ := json.Marshal(res)
		return mcp.NewToolResultText(string(b)), nil
	})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestRelatedMessagesTravelOnTheirRequestsStream: with --url, a question
// the server sends on a call's response stream reaches the client on that
// call's stream, not on the GET stream.
func TestRelatedMessagesTravelOnTheirRequestsStream(t *testing.T) {
	url := elicitingHTTPServer(t)
	g := startGateway(t, Options{Session: bridge.Options{URL: url, Route: elicit.RouteClient}})
	c := rawSession(t, g, "related", true)
	call := c.post(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask","arguments":{"message":"On my stream?"}}}`)
	next := events(t, call)
	ev, ok := next()
	if !ok || !strings.Contains(ev.data, `"method":"elicitation/create"`) || !strings.Contains(ev.data, "On my stream?") {
		t.Fatalf("the call's stream began with %+v; want the server's question", ev)
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	jsonUnmarshal(t, ev.data, &req)
	if r := c.post(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"ok":true}}}`); r.StatusCode != 202 {
		t.Fatalf("the client's answer: got %s; want 202", r.Status)
	}
	res, ok := next()
	if !ok || !strings.Contains(res.data, `"id":9`) || !strings.Contains(res.data, `\"ok\":true`) {
		t.Fatalf("the call's result: %+v", res)
	}
}

// TestProgressTravelsOnItsRequestsStream: the bridge's keepalive progress
// for a call with a progressToken goes on that call's stream, which
// becomes an event stream for it.
func TestProgressTravelsOnItsRequestsStream(t *testing.T) {
	o := sessionOpts(elicit.RouteRemote)
	o.Keepalive = 20 * time.Millisecond
	g := startGateway(t, Options{Session: o})
	w := g.watch()
	c := rawSession(t, g, "progress", false)
	call := c.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"message":"Progress?"},"_meta":{"progressToken":"tok-5"}}}`)
	if ct := call.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q; want an event stream", ct)
	}
	next := events(t, call)
	ev, ok := next()
	if !ok || !strings.Contains(ev.data, `"method":"notifications/progress"`) || !strings.Contains(ev.data, `"progressToken":"tok-5"`) {
		t.Fatalf("the call's stream began with %+v; want progress for tok-5", ev)
	}
	g.answer(t, w.question(t, "Progress?"), answerCancel)
	for {
		ev, ok := next()
		if !ok {
			t.Fatal("the call's stream ended without its result")
		}
		if strings.Contains(ev.data, `"id":5`) {
			return
		}
	}
}

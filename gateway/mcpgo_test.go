package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// mcpgoClient connects mcp-go's streamable HTTP client to the gateway,
// pinned to protocol, as clientName.
func mcpgoClient(t *testing.T, g *gw, clientName, protocol string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := newMCPGoClient(ctx, g, clientName, protocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newMCPGoClient is mcpgoClient for any goroutine: it returns its error.
func newMCPGoClient(ctx context.Context, g *gw, clientName, protocol string) (*client.Client, error) {
	return newMCPGoClientWith(ctx, g, clientName, protocol, mcpToken)
}

// newMCPGoClientWith is newMCPGoClient sending token as its bearer.
func newMCPGoClientWith(ctx context.Context, g *gw, clientName, protocol, token string) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(g.mcpURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(protocol))
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("starting the client: %w", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocol
	req.Params.ClientInfo = mcp.Implementation{Name: clientName, Version: "1.0.0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

func callTool(ctx context.Context, c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	return c.CallTool(ctx, req)
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPGoClientQuestionAnsweredByOperator: an mcp-go HTTP client calls a
// tool whose server elicits; the question reaches the operator on the
// host's AEP endpoint with the client's name, and the answer reaches the
// server.
func TestMCPGoClientQuestionAnsweredByOperator(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	w := g.watch()
	c := mcpgoClient(t, g, "mcp-go-client", "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	done := make(chan *mcp.CallToolResult, 1)
	errs := make(chan error, 1)
	go func() {
		r, err := callTool(ctx, c, "ask", map[string]any{"message": "Deploy from mcp-go?"})
		if err != nil {
			errs <- err
			return
		}
		done <- r
	}()
	q := w.question(t, "Deploy from mcp-go?")
	if got := w.sessionOf(t, "mcp-go-client"); got != q.Session {
		t.Errorf("the question is in session %s; mcp-go-client's is %s", q.Session, got)
	}
	g.answer(t, q, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	select {
	case r := <-done:
		if got := resultText(r); !strings.Contains(got, `"action":"accept"`) || !strings.Contains(got, `"environment":"staging"`) {
			t.Errorf("the server received %s; want accept with environment staging", got)
		}
	case err := <-errs:
		t.Fatalf("tools/call: %v", err)
	case <-ctx.Done():
		t.Fatal("no tools/call result")
	}
}

// TestMCPGoClientStateless: mcp-go's client at its default, MCP
// 2026-07-28, is served without a session.
func TestMCPGoClientStateless(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	c := mcpgoClient(t, g, "mcp-go-modern", mcp.LATEST_PROTOCOL_VERSION)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	r, err := callTool(ctx, c, "echo", map[string]any{"message": "no session"})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if got := resultText(r); got != "no session" {
		t.Errorf("echo: got %q; want %q", got, "no session")
	}
	if v := c.GetTransport().GetSessionId(); v != "" {
		t.Errorf("the client got session %q; want none under 2026-07-28", v)
	}
	g.sharedSessions(t, 1)
}

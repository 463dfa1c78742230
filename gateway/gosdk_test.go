package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// bearer adds the gateway's token to every request of an HTTP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// goSDKSession connects go-sdk's streamable HTTP client as name; protocol
// "" means go-sdk's default (MCP 2026-07-28, falling back to initialize).
func goSDKSession(t *testing.T, g *gw, name, protocol string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return goSDKSessionWith(t, g, name, protocol, opts, mcpToken)
}

// goSDKSessionWith is goSDKSession sending token as its bearer.
func goSDKSessionWith(t *testing.T, g *gw, name, protocol string, opts *sdk.ClientOptions, token string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1.0.0"}, opts)
	tr := &sdk.StreamableClientTransport{Endpoint: g.mcpURL, HTTPClient: &http.Client{Transport: bearer{token}}}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("go-sdk connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func sdkText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestGoSDKClientElicitsAndRaces: go-sdk's streamable client under MCP
// 2025-11-25 declares elicitation; with --route both the question goes to
// it and to the operators, and the operator's answer wins.
func TestGoSDKClientElicitsAndRaces(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteBoth)})
	w := g.watch()
	asked := make(chan string, 1)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	cs := goSDKSession(t, g, "go-sdk-client", "2025-11-25", &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked <- r.Params.Message
			select { // the client is slow: the operator answers first
			case <-hold:
			case <-ctx.Done():
			}
			return &sdk.ElicitResult{Action: "cancel"}, nil
		}})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res := make(chan string, 1)
	go func() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "Race from go-sdk?"}})
		if err != nil {
			res <- "error: " + err.Error()
			return
		}
		res <- sdkText(r)
	}()
	if got := <-asked; got != "Race from go-sdk?" {
		t.Errorf("the client was asked %q", got)
	}
	q := w.question(t, "Race from go-sdk?")
	g.answer(t, q, aep.Answer{Values: map[string]any{"environment": "production", "confirm": false}})
	if got := <-res; !strings.Contains(got, `"action":"accept"`) || !strings.Contains(got, `"production"`) {
		t.Errorf("the server received %s; want the operator's accept", got)
	}
	if got := w.sessionOf(t, "go-sdk-client"); got != q.Session {
		t.Errorf("the question is in session %s; go-sdk-client's is %s", q.Session, got)
	}
}

// TestGoSDKClientStateless: go-sdk's default client speaks MCP 2026-07-28
// (server/discover, then requests that carry their version in _meta and
// no session); every request is served by the one shared session of its
// principal, and an input_required round is answered by an operator.
func TestGoSDKClientStateless(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	w := g.watch()
	cs := goSDKSession(t, g, "go-sdk-modern", "", nil)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q; want 2026-07-28 (stateless)", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "stateless"}})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if got := sdkText(r); got != "stateless" {
		t.Errorf("echo: got %q; want stateless", got)
	}
	res := make(chan string, 1)
	go func() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "mrtr-ask", Arguments: map[string]any{"rounds": 1}})
		if err != nil {
			res <- "error: " + err.Error()
			return
		}
		res <- sdkText(r)
	}()
	q := w.question(t, "Who deploys?")
	g.answer(t, q, aep.Answer{Values: map[string]any{"who": "ops-on-call"}})
	if got := <-res; !strings.Contains(got, "ops-on-call") {
		t.Errorf("mrtr-ask: got %s; want the operator's answer", got)
	}
	g.sharedSessions(t, 1)
}

// TestGoSDKStatelessClientWinsTheRace: under MCP 2026-07-28 with --route
// both, go-sdk's client gets the input_required too and answers first; its
// retry, which echoes the requestState, is served by the shared session
// that handed it out, so the operators' copy of the question is settled
// there.
func TestGoSDKStatelessClientWinsTheRace(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteBoth)})
	w := g.watch()
	cs := goSDKSession(t, g, "go-sdk-racer", "", &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"who": "the-client"}}, nil
		}})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "mrtr-ask", Arguments: map[string]any{"rounds": 1}})
	if err != nil {
		t.Fatalf("mrtr-ask: %v", err)
	}
	if got := sdkText(r); !strings.Contains(got, "the-client") {
		t.Errorf("mrtr-ask: got %s; want the client's answer", got)
	}
	q := w.question(t, "Who deploys?")
	w.waitFor(t, "the operators' copy to be settled", func(w *watcher) bool { return w.resolved[q.ID] != "" })
	g.sharedSessions(t, 1)
}

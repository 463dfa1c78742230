// Command elicitserver is an mcp-go MCP server that elicits, used by the
// bridge's end-to-end tests as a real upstream peer over stdio.
//
// Tools:
//   - ask {schema, message, key}: sends elicitation/create and returns the
//     ElicitResult as JSON text. schema is "pinned" (the AEP pinned
//     mapping's schema), "nested" (a schema no form can carry) or a JSON
//     schema.
//   - cancel-ask {key}: withdraws the pending ask started with key, sending
//     notifications/cancelled for its request as a well-behaved server does.
//   - echo {message}: returns message.
//   - ask-url {id, url}: sends a URL-mode elicitation/create and returns
//     the ElicitResult as JSON text.
//   - complete-url {id}: sends notifications/elicitation/complete for id.
//   - mrtr-ask {rounds, schema}: asks through input_required results (MCP
//     2026-07-28; mcp-go sends a client of an earlier revision an
//     elicitation/create instead), one round or two, and returns the last
//     answer as JSON. schema, a JSON schema, replaces the first round's.
//   - mrtr-forever: answers input_required on every attempt.
//   - flood {bytes, size}: sends notifications/message of about size
//     bytes each (default 64 KiB), numbered from 0 in data.seq, until
//     bytes were sent, then returns how many it sent; nothing relates
//     them to the call, so a gateway puts them on its GET stream.
//   - crash {code}: exits the process with code.
//
// With -http ADDR it serves streamable HTTP instead of stdio and prints
// "listening on http://HOST:PORT/mcp" on stderr once it accepts
// connections. Over stdio, with AEP_TEST_RECORD set, it appends every byte
// it reads to that file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testpeers/record"
)

const pinned = `{"type":"object","properties":{
 "environment":{"type":"string","enum":["staging","production"],"enumNames":["Staging","Production"],"title":"Environment"},
 "replicas":{"type":"integer","title":"Replica count"},
 "reason":{"type":"string","title":"Why now"},
 "confirm":{"type":"boolean","title":"Proceed immediately"}},
 "required":["environment","confirm"]}`

const nested = `{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}}}`

// requests counts the server-to-client requests this process has sent. The
// stdio session numbers its requests 1, 2, … in order, and this server
// sends only elicitations, so the n-th ask has request id n. Asks are
// started under mu so the two counters stay in step.
var (
	mu       sync.Mutex
	requests atomic.Int64
	pending  = map[string]pendingAsk{}
)

type pendingAsk struct {
	id     int64
	cancel context.CancelFunc
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	s := server.NewMCPServer("elicit-test-server", "1.0.0",
		server.WithElicitation(),
		//lint:ignore SA1019 this peer tests the 2025 flow (elicitation/create requests); the 2026-07-28 flow is tested on purpose elsewhere
		server.WithLegacyServerInitiatedRequests(),
		server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("ask",
		mcp.WithString("schema", mcp.Description("pinned, nested, or a JSON schema")),
		mcp.WithString("message"), mcp.WithString("key")), ask(s))
	s.AddTool(mcp.NewTool("cancel-ask", mcp.WithString("key")), cancelAsk(s))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("message", "")), nil
	})
	s.AddTool(mcp.NewTool("blob", mcp.WithNumber("bytes")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("x", r.GetInt("bytes", 0))), nil
	})
	s.AddTool(mcp.NewTool("ask-url", mcp.WithString("id"), mcp.WithString("url")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestURLElicitation(ctx, server.ClientSessionFromContext(ctx), r.GetString("id", "el-1"), r.GetString("url", "https://example.com/login"), "Sign in to continue")
		if err != nil {
			return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		b, _ := json.Marshal(res)
		return mcp.NewToolResultText(string(b)), nil
	})
	s.AddTool(mcp.NewTool("complete-url", mcp.WithString("id")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := s.SendElicitationComplete(ctx, server.ClientSessionFromContext(ctx), r.GetString("id", "el-1")); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("completed"), nil
	})
	// MCP 2026-07-28 multi round-trip: the tool answers input_required
	// until it has what it needs (one round, or two with rounds=2).
	s.AddTool(mcp.NewTool("mrtr-ask", mcp.WithNumber("rounds"), mcp.WithString("schema")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := server.ElicitationResponse(r.Params.InputResponses, "name")
		if name == nil && strings.HasPrefix(r.Params.RequestState, "round-2:") {
			// The second round: the first answer travels in the state.
			name = &mcp.ElicitationResult{}
			json.Unmarshal([]byte(strings.TrimPrefix(r.Params.RequestState, "round-2:")), name)
		}
		if name == nil {
			var schema any = map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}, "required": []string{"who"}}
			if custom := r.GetString("schema", ""); custom != "" {
				schema = json.RawMessage(custom)
			}
			return server.NewInputRequestBuilder("round-1").Elicit("name", mcp.ElicitationParams{Message: "Who deploys?",
				RequestedSchema: schema}).ToolResult(), nil
		}
		if r.GetFloat("rounds", 1) >= 2 {
			confirm := server.ElicitationResponse(r.Params.InputResponses, "confirm")
			if confirm == nil {
				b, _ := json.Marshal(name)
				return server.NewInputRequestBuilder("round-2:"+string(b)).Elicit("confirm", mcp.ElicitationParams{Message: "Sure?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"}}}).ToolResult(), nil
			}
			b, _ := json.Marshal(map[string]any{"state": r.Params.RequestState, "confirm": confirm})
			return mcp.NewToolResultText(string(b)), nil
		}
		b, _ := json.Marshal(name)
		return mcp.NewToolResultText(string(b)), nil
	})
	s.AddTool(mcp.NewTool("mrtr-forever"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Never satisfied: asks again on every retry.
		return server.NewInputRequestBuilder("again").Elicit("more", mcp.ElicitationParams{Message: "More?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}).ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("flood", mcp.WithNumber("bytes"), mcp.WithNumber("size")), flood(s))
	s.AddTool(mcp.NewTool("crash", mcp.WithNumber("code")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(int(r.GetFloat("code", 3)))
		return nil, nil
	})
	if err := serve(s, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "elicitserver:", err)
		os.Exit(1)
	}
}

// serve serves s over stdio, or over streamable HTTP on addr.
func serve(s *server.MCPServer, addr string) error {
	if addr == "" {
		if err := record.Stdin(); err != nil {
			return err
		}
		return server.ServeStdio(s)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s))
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, mux)
}

func ask(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		schema := r.GetString("schema", "pinned")
		switch schema {
		case "pinned":
			schema = pinned
		case "nested":
			schema = nested
		}
		// Sent as written, so the properties keep their declared order.
		var object map[string]any
		if err := json.Unmarshal([]byte(schema), &object); err != nil {
			return mcp.NewToolResultError("bad schema: " + err.Error()), nil
		}
		requested := json.RawMessage(schema)
		msg := r.GetString("message", "Configure the deployment target")
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type res struct {
			r   *mcp.ElicitationResult
			err error
		}
		done := make(chan res, 1)
		mu.Lock()
		id := requests.Add(1)
		if key := r.GetString("key", ""); key != "" {
			pending[key] = pendingAsk{id: id, cancel: cancel}
		}
		go func() {
			er, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: msg, RequestedSchema: requested}})
			done <- res{er, err}
		}()
		mu.Unlock()
		got := <-done
		if got.err != nil {
			return mcp.NewToolResultError("elicitation failed: " + got.err.Error()), nil
		}
		b, _ := json.Marshal(got.r)
		return mcp.NewToolResultText(string(b)), nil
	}
}

func cancelAsk(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		key := r.GetString("key", "")
		mu.Lock()
		p, ok := pending[key]
		delete(pending, key)
		mu.Unlock()
		if !ok {
			return mcp.NewToolResultError("no pending ask " + key), nil
		}
		if err := s.SendNotificationToClient(ctx, "notifications/cancelled", map[string]any{"requestId": p.id, "reason": "withdrawn by the server"}); err != nil {
			return mcp.NewToolResultError("sending cancel: " + err.Error()), nil
		}
		p.cancel()
		return mcp.NewToolResultText(fmt.Sprintf("cancelled request %d", p.id)), nil
	}
}

// flood sends notifications/message until the bytes asked for were sent.
// mcp-go refuses a notification while its queue to the client is full;
// the tool then waits for room, so every notification is sent in order.
func flood(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		total, size := r.GetInt("bytes", 1<<20), max(r.GetInt("size", 64<<10), 1)
		pad := strings.Repeat("x", size)
		sent, n := 0, 0
		for sent < total {
			err := s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "logger": "flood",
				"data": map[string]any{"seq": n, "pad": pad}})
			switch {
			case err == nil:
				sent, n = sent+size, n+1
			case errors.Is(err, server.ErrNotificationChannelBlocked):
				time.Sleep(100 * time.Microsecond) // the queue drains as stdout takes it
			default:
				return mcp.NewToolResultError(fmt.Sprintf("flood stopped after %d notifications: %v", n, err)), nil
			}
			if ctx.Err() != nil {
				return mcp.NewToolResultError(fmt.Sprintf("flood cancelled after %d notifications", n)), nil
			}
		}
		return mcp.NewToolResultText(fmt.Sprintf("flooded %d notifications, %d bytes", n, sent)), nil
	}
}

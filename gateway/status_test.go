package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// TestModernErrorStatuses: a stateless MCP 2026-07-28 request's JSON-RPC
// error travels with the HTTP status the transport names for its code
// (basic/transports/streamable-http): 404 for -32601, 400 for -32602
// (the server's, and the gateway's own for a request whose _meta lacks
// the version its MCP-Protocol-Version header names), 200 for a result.
// A session's (2025-11-25) error stays 200.
func TestModernErrorStatuses(t *testing.T) {
	t.Parallel()
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient)})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	type answer struct {
		Status int
		ID     string
		Code   int
	}
	for _, tc := range []struct {
		name, method, toolName, body string
		want                         answer
	}{
		{"a result", "tools/call", "echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"echo","arguments":{"message":"hi"}}}`,
			answer{Status: http.StatusOK, ID: "1"}},
		{"a method the server lacks", "nope/nothing", "", `{"jsonrpc":"2.0","id":2,"method":"nope/nothing","params":{` + meta + `}}`,
			answer{Status: http.StatusNotFound, ID: "2", Code: mcp.METHOD_NOT_FOUND}},
		{"initialize, which 2026-07-28 removed", "initialize", "", `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{` + meta + `}}`,
			answer{Status: http.StatusNotFound, ID: "3", Code: mcp.METHOD_NOT_FOUND}},
		{"a tool the server lacks", "tools/call", "nope", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{` + meta + `,"name":"nope","arguments":{}}}`,
			answer{Status: http.StatusBadRequest, ID: "4", Code: mcp.INVALID_PARAMS}},
		{"_meta without the version", "tools/list", "", `{"jsonrpc":"2.0","id":"five","method":"tools/list","params":{"_meta":{}}}`,
			answer{Status: http.StatusBadRequest, ID: `"five"`, Code: mcp.INVALID_PARAMS}},
		{"no _meta", "tools/list", "", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`,
			answer{Status: http.StatusBadRequest, ID: "6", Code: mcp.INVALID_PARAMS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Authorization": {"Bearer " + mcpToken}, "Content-Type": {"application/json"}, "Accept": {"application/json"},
				mcp.HeaderProtocolVersion: {"2026-07-28"}, mcp.HeaderMethod: {tc.method}}
			if tc.toolName != "" {
				h.Set(mcp.HeaderName, tc.toolName)
			}
			resp := g.request(t, "POST", "/mcp", h, tc.body)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("status %s, body %q: %v", resp.Status, b, err)
			}
			got := answer{Status: resp.StatusCode, ID: string(m.ID)}
			if m.Error != nil {
				got.Code = m.Error.Code
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s\nbody: %s", d, b)
			}
		})
	}

	t.Run("a session's error", func(t *testing.T) {
		c := rawSession(t, g, "legacy", false)
		resp := c.post(`{"jsonrpc":"2.0","id":7,"method":"nope/nothing"}`)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %s; want 200 (a 2025-11-25 session's JSON-RPC error)", resp.Status)
		}
		if msgs := readAll(t, resp); len(msgs) != 1 {
			t.Errorf("got %v; want one error response", msgs)
		}
	})
}

package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`

// TestRefusedRequests: what the gateway refuses before any session sees
// the request, and what it says.
func TestRefusedRequests(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), MaxBody: 1 << 10})
	live := rawSession(t, g, "live", false)
	base := http.Header{"Authorization": {"Bearer " + mcpToken}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}}
	with := func(k, v string) http.Header {
		h := base.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	tests := []struct {
		name       string
		method     string
		path       string
		header     http.Header
		host       string
		body       string
		wantStatus int
		wantText   string
	}{
		{"no token", "POST", "/mcp", with("Authorization", ""), "", initBody, 401, "bearer token is required"},
		{"wrong token", "POST", "/mcp", with("Authorization", "Bearer "+mcpToken+"x"), "", initBody, 401, "bearer token is required"},
		{"wrong scheme", "POST", "/mcp", with("Authorization", "Basic "+mcpToken), "", initBody, 401, "bearer token is required"},
		{"wrong token on the legacy stream", "GET", "/sse", with("Authorization", "Bearer nope"), "", "", 401, "bearer token is required"},
		{"foreign origin", "POST", "/mcp", with("Origin", "http://evil.example"), "", initBody, 403, "browser pages from"},
		{"foreign origin with no token", "POST", "/mcp", with("Origin", "http://evil.example"), "", initBody, 403, "browser pages from"},
		{"rebound host name", "POST", "/mcp", base, "evil.example:80", initBody, 403, "not Host"},
		{"no session", "POST", "/mcp", base, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 400, "send initialize first"},
		{"unknown session", "POST", "/mcp", with(mcp.HeaderSessionID, "00000000000000000000000000000000"), "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 404, "no such MCP session"},
		{"not JSON", "POST", "/mcp", base, "", `{"jsonrpc":`, 400, "Parse error"},
		{"too large", "POST", "/mcp", base, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`, 413, "larger than the gateway's limit of 1024 bytes"},
		{"wrong content type", "POST", "/mcp", with("Content-Type", "text/plain"), "", initBody, 415, "Content-Type: application/json"},
		{"no acceptable type", "POST", "/mcp", with("Accept", "text/html"), "", initBody, 406, "Accept"},
		{"other protocol version", "POST", "/mcp", with(mcp.HeaderSessionID, live.id), "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 400, "not the version this session negotiated"},
		{"malformed protocol version", "GET", "/mcp", with(mcp.HeaderSessionID, live.id), "", "", 400, "not a protocol revision"},
		{"GET without a session", "GET", "/mcp", with("Accept", "text/event-stream"), "", "", 400, "Mcp-Session-Id"},
		{"DELETE without a session", "DELETE", "/mcp", base, "", "", 400, "Mcp-Session-Id"},
		{"DELETE of an unknown session", "DELETE", "/mcp", with(mcp.HeaderSessionID, "nope"), "", "", 404, "no such MCP session"},
		{"legacy POST of an unknown session", "POST", "/message?sessionId=nope", base, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 404, "no such HTTP+SSE session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.header.Clone()
			switch tc.name {
			case "other protocol version":
				h.Set(mcp.HeaderProtocolVersion, "2025-06-18")
			case "malformed protocol version":
				h.Set(mcp.HeaderProtocolVersion, "latest")
			}
			req, _ := http.NewRequest(tc.method, g.base+tc.path, strings.NewReader(tc.body))
			req.Header = h
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			code, msg := status(t, resp)
			if code != tc.wantStatus || !strings.Contains(msg, tc.wantText) {
				t.Errorf("got %d %q; want %d with %q", code, msg, tc.wantStatus, tc.wantText)
			}
			if code == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
	if n := g.srv.Sessions(); n != 1 {
		t.Errorf("sessions after the refused requests: got %d; want 1 (none was started)", n)
	}
}

// TestOriginAndHostAllowed: an --allow-origin page gets CORS answers, and
// an --allow-host name is served.
func TestOriginAndHostAllowed(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote),
		AllowOrigins: []string{"https://agent.example"}, AllowHosts: []string{"mcp.example"}})
	req, _ := http.NewRequest("OPTIONS", g.mcpURL, nil)
	req.Header.Set("Origin", "https://agent.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://agent.example" {
		t.Errorf("preflight: got %d, allow-origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	c := &raw{t: t, g: g, hd: http.Header{"Origin": {"https://agent.example"}}}
	resp = c.post(initBody)
	if got := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(got, mcp.HeaderSessionID) {
		t.Errorf("the page cannot read Mcp-Session-Id: expose %q", got)
	}
	readAll(t, resp)
	req, _ = http.NewRequest("POST", g.mcpURL, strings.NewReader(initBody))
	req.Header = c.header()
	req.Host = "mcp.example"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := readAll(t, resp); resp.StatusCode != http.StatusOK || len(msgs) != 1 {
		t.Errorf("allowed host: got %d %v", resp.StatusCode, msgs)
	}
}

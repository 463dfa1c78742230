package gateway

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestParamHeadersChecked: once a relayed tools/list taught the gateway
// a tool's x-mcp-header bindings, a stateless tools/call of it must carry
// each bound argument in its Mcp-Param header, well encoded and equal to
// the body's value (MCP 2026-07-28 streamable HTTP, Server Validation);
// a tool the gateway knows no bindings of passes on for the server to
// check.
func TestParamHeadersChecked(t *testing.T) {
	t.Parallel()
	var tools toolHeaders
	tools.learn([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` +
		`{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}},` +
		`{"name":"nested","inputSchema":{"type":"object","properties":{"cfg":{"type":"object","properties":{"tenant":{"type":"integer","x-mcp-header":"Tenant"}}}}}},` +
		`{"name":"plain","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}]}}`))
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, tc := range []struct {
		name, tool, args string
		params           map[string]string
		want             string // "" when accepted, else a part of the refusal
	}{
		{"matching", "sql", `{"region":"us-west1","n":42}`, map[string]string{"Region": "us-west1", "N": "42"}, ""},
		{"Base64", "sql", `{"region":"Hello"}`, map[string]string{"Region": "=?base64?SGVsbG8=?="}, ""},
		{"not Base64 without the suffix: a literal", "sql", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Region": "=?base64?SGVsbG8="}, ""},
		{"integer compared as a number", "sql", `{"n":42}`, map[string]string{"N": "42.0"}, ""},
		{"no argument, no header", "sql", `{}`, nil, ""},
		{"missing", "sql", `{"region":"us-west1"}`, nil, "Mcp-Param-Region"},
		{"mismatched", "sql", `{"region":"us-west1"}`, map[string]string{"Region": "eu-west1"}, "Mcp-Param-Region"},
		{"bad Base64 padding", "sql", `{"region":"Hello"}`, map[string]string{"Region": "=?base64?SGVsbG8?="}, "Base64"},
		{"bad Base64 characters", "sql", `{"region":"Hello"}`, map[string]string{"Region": "=?base64?SGVs!!!bG8=?="}, "Base64"},
		{"a header for an absent argument", "sql", `{}`, map[string]string{"Region": "us-west1"}, "Mcp-Param-Region"},
		{"nested, matching", "nested", `{"cfg":{"tenant":7}}`, map[string]string{"Tenant": "7"}, ""},
		{"nested, missing", "nested", `{"cfg":{"tenant":7}}`, nil, "Mcp-Param-Tenant"},
		{"a tool without bindings", "plain", `{"q":"x"}`, map[string]string{"Region": "anything"}, ""},
		{"a tool the gateway never saw listed", "other", `{"region":"x"}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"` + tc.tool + `","arguments":` + tc.args + `}}`
			env, ok := parse([]byte(body))
			if !ok {
				t.Fatal("the test's body does not parse")
			}
			r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
			r.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
			r.Header.Set(mcp.HeaderMethod, "tools/call")
			r.Header.Set(mcp.HeaderName, tc.tool)
			for k, v := range tc.params {
				r.Header.Set(mcp.HeaderParamPrefix+k, v)
			}
			got := headersMismatch(r, []byte(body), &env, &tools)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("refused: %s; want accepted", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("got %q; want a refusal naming %q", got, tc.want)
			}
		})
	}
}

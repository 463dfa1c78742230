package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHeaderValue(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "plain ASCII", in: "us-west1", want: "us-west1"},
		{name: "non-ASCII", in: "Hello, 世界", want: "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{name: "leading and trailing spaces", in: " padded ", want: "=?base64?IHBhZGRlZCA=?="},
		{name: "a newline", in: "line1\nline2", want: "=?base64?bGluZTEKbGluZTI=?="},
		{name: "shaped like the sentinel", in: "=?base64?literal?=", want: "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{name: "a URI", in: "file:///projects/myapp/config.json", want: "file:///projects/myapp/config.json"},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := headerValue(tt.in); got != tt.want {
				t.Errorf("headerValue(%q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParamValue(t *testing.T) {
	args := json.RawMessage(`{"region":"us-west1","n":42,"f":42.0,"big":9007199254740993,"frac":1.5,"ok":true,"none":null,"obj":{"tenant":"acme"}}`)
	tests := []struct {
		name string
		path []string
		want string
		ok   bool
	}{
		{name: "string", path: []string{"region"}, want: "us-west1", ok: true},
		{name: "integer", path: []string{"n"}, want: "42", ok: true},
		{name: "integer written with a fraction", path: []string{"f"}, want: "42", ok: true},
		{name: "beyond 2^53-1", path: []string{"big"}},
		{name: "not an integer", path: []string{"frac"}},
		{name: "boolean", path: []string{"ok"}, want: "true", ok: true},
		{name: "null gives no header", path: []string{"none"}},
		{name: "missing gives no header", path: []string{"absent"}},
		{name: "nested", path: []string{"obj", "tenant"}, want: "acme", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := paramValue(args, tt.path)
			if got != tt.want || ok != tt.ok {
				t.Errorf("paramValue(%v) = %q, %t; want %q, %t", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestHeaderBindings(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []paramBinding
		err    string
	}{
		{name: "none", schema: `{"type":"object","properties":{"q":{"type":"string"}}}`},
		{name: "top level and nested", schema: `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"cfg":{"type":"object","properties":{"tenant":{"type":"integer","x-mcp-header":"Tenant"}}}}}`,
			want: []paramBinding{{path: []string{"region"}, header: "Region"}, {path: []string{"cfg", "tenant"}, header: "Tenant"}}},
		{name: "an enum value shaped like an annotation is no annotation", schema: `{"type":"object","properties":{"a":{"type":"object","enum":[{"x-mcp-header":"X"}]}}}`},
		{name: "a number", schema: `{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`, err: "is on a number"},
		{name: "under items", schema: `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}}`, err: "not statically reachable"},
		{name: "under oneOf", schema: `{"type":"object","properties":{"o":{"oneOf":[{"type":"string","x-mcp-header":"O"}]}}}`, err: "not statically reachable"},
		{name: "under $defs", schema: `{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}}}`, err: "not statically reachable"},
		{name: "not a token", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}}`, err: "not an HTTP field-name token"},
		{name: "empty", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, err: "not an HTTP field-name token"},
		{name: "duplicate in another case", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`, err: "used twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := headerBindings(json.RawMessage(tt.schema))
			if tt.err != "" {
				if !strings.Contains(err, tt.err) {
					t.Fatalf("got reason %q; want it to contain %q", err, tt.err)
				}
				return
			}
			if err != "" {
				t.Fatalf("got reason %q; want a valid tool", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(paramBinding{})); diff != "" {
				t.Errorf("bindings (-want +got):\n%s", diff)
			}
		})
	}
}

// recordingServer is a 2026-07-28 streamable HTTP server that keeps the
// headers of every POST, answers tools/list with tools whose
// x-mcp-header annotations are valid and invalid, and answers any other
// request with an empty result.
type recordingServer struct {
	// pad is the length of the description of tools/list's last tool.
	pad     int
	mu      sync.Mutex
	headers []http.Header
	bodies  []string
}

func (s *recordingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &m)
	if len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if m.Method == "tools/list" {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[`+
			`{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"q":{"type":"string"}}}},`+
			`{"name":"bad","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}},`+
			`{"name":"plain","description":"%s","inputSchema":{"type":"object"}}],"resultType":"complete"}}`, m.ID, strings.Repeat("d", s.pad))
		return
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete"}}`, m.ID)
}

func (s *recordingServer) header(i int, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[i].Get(name)
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestModernRequestHeaders checks the request metadata of 2026-07-28 on
// every POST: the protocol version from the body's _meta, Mcp-Method,
// Mcp-Name (Base64 when unsafe), and the Mcp-Param headers of the
// x-mcp-header annotations a tools/list taught; a tool whose annotations
// break the rules is left out of tools/list.
func TestModernRequestHeaders(t *testing.T) {
	s := &recordingServer{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
	send := sender(t, c)
	send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	list := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sql","arguments":{"region":"eu-west-1","q":"select 1"},` + modernMeta + `}}`)
	send(`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///tmp/ünï.txt",` + modernMeta + `}}`)
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}}`) // a 2025 message: no modern headers of its own

	if diff := cmp.Diff([]string{"sql", "plain"}, toolNames(list)); diff != "" {
		t.Errorf("tools/list through the transport (-want +got):\n%s", diff)
	}
	tests := []struct {
		name   string
		i      int
		header string
		want   string
	}{
		{"discover: version", 0, "Mcp-Protocol-Version", "2026-07-28"},
		{"discover: method", 0, "Mcp-Method", "server/discover"},
		{"discover: no name", 0, "Mcp-Name", ""},
		{"tools/list: method", 1, "Mcp-Method", "tools/list"},
		{"tools/call: version", 2, "Mcp-Protocol-Version", "2026-07-28"},
		{"tools/call: method", 2, "Mcp-Method", "tools/call"},
		{"tools/call: name", 2, "Mcp-Name", "sql"},
		{"tools/call: x-mcp-header", 2, "Mcp-Param-Region", "eu-west-1"},
		{"resources/read: name in Base64", 3, "Mcp-Name", "=?base64?ZmlsZTovLy90bXAvw7xuw68udHh0?="},
		{"a 2025 request: no method header", 4, "Mcp-Method", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.header(tt.i, tt.header); got != tt.want {
				t.Errorf("POST %d %s: got %q; want %q", tt.i+1, tt.header, got, tt.want)
			}
		})
	}
}

// TestRPCErrorBodyPassesThrough: a modern server refuses a request with
// 400 and a JSON-RPC error (UnsupportedProtocolVersion with the versions
// it supports); the client gets that error, code and data, under its own
// id, because it needs them to negotiate.
func TestRPCErrorBodyPassesThrough(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`)
	}))
	t.Cleanup(srv.Close)
	c := dial(t, Options{URL: srv.URL})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":"d1","method":"server/discover","params":{` + modernMeta + `}}`))
	got := next(t, c)
	want := `{"error":{"code":-32022,"message":"unsupported","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}},"id":"d1","jsonrpc":"2.0"}`
	if got != want {
		t.Fatalf("got %s; want %s", got, want)
	}
}

// TestModernCancelClosesTheStream: under 2026-07-28 a client's
// notifications/cancelled is not POSTed; the request's response stream is
// closed instead, which is the cancellation on Streamable HTTP.
func TestModernCancelClosesTheStream(t *testing.T) {
	gone := make(chan struct{})
	var mu sync.Mutex
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct{ Method string }
		json.Unmarshal(body, &m)
		mu.Lock()
		methods = append(methods, m.Method)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	t.Cleanup(srv.Close)
	c := dial(t, Options{URL: srv.URL})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow",` + modernMeta + `}}`))
	c.writeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
	<-gone
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"tools/call"}, methods); diff != "" {
		t.Errorf("POSTs (-want +got):\n%s", diff)
	}
}

// TestLargeModernToolsListIsStillChecked checks that a tools/list result
// too large to be read whole by default still has its tools checked: a
// tool whose x-mcp-header breaks the rules never reaches the client, and
// the bindings are learned. One over MaxWholeMessage fails its request
// with an error naming the limit, and the next request goes on.
func TestLargeModernToolsListIsStillChecked(t *testing.T) {
	s := &recordingServer{pad: DefaultMaxMessage + 1<<20}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := dial(t, Options{URL: srv.URL, Transport: "streamable", MaxWholeMessage: DefaultMaxMessage + 2<<20})
	send := sender(t, c)
	send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	list := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	if strings.Contains(list, `"bad"`) || !strings.Contains(list, `"sql"`) || !strings.Contains(list, `"plain"`) {
		t.Errorf("a %d-byte tools/list reached the client with the tools %s; want sql and plain, not bad", len(list), toolNames(list))
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sql","arguments":{"region":"eu-west-1"},` + modernMeta + `}}`)
	if got := s.header(2, "Mcp-Param-Region"); got != "eu-west-1" {
		t.Errorf("tools/call after the large list: Mcp-Param-Region %q; want eu-west-1", got)
	}

	s.mu.Lock()
	s.pad = DefaultMaxMessage + 3<<20
	s.mu.Unlock()
	over := send(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + modernMeta + `}}`)
	if !strings.Contains(over, `"id":4`) || !strings.Contains(over, `"error"`) || !strings.Contains(over, fmt.Sprint(DefaultMaxMessage+2<<20)) {
		t.Errorf("tools/list over the limit got %.200s; want an error for id 4 naming the limit", over)
	}
	if got := send(`{"jsonrpc":"2.0","id":5,"method":"ping","params":{` + modernMeta + `}}`); !strings.Contains(got, `"id":5`) {
		t.Errorf("the request after got %.200s; want its response", got)
	}
}

// toolNames lists the tool names of a tools/list response, for messages.
func toolNames(resp string) []string {
	var r struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(resp), &r)
	var names []string
	for _, tl := range r.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// sender returns a function that writes one message to c and returns the
// next message c reads.
func sender(t *testing.T, c *Conn) func(msg string) string {
	return func(msg string) string {
		t.Helper()
		c.writeMessage([]byte(msg))
		return next(t, c)
	}
}

// TestToolHeadersAreShared: connections that share a ToolHeaders (a
// gateway's one-shot sessions) mirror the x-mcp-header bindings one of
// them learned: the tools/call on a second connection carries
// Mcp-Param-Region; a connection of its own, which never saw tools/list,
// cannot. A later listing without the annotation unlearns it.
func TestToolHeadersAreShared(t *testing.T) {
	s := &recordingServer{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	shared := NewToolHeaders()
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sql","arguments":{"region":"eu-west-1","q":"select 1"},` + modernMeta + `}}`

	sender(t, dial(t, Options{URL: srv.URL, Transport: "streamable", ToolHeaders: shared}))(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`)
	sender(t, dial(t, Options{URL: srv.URL, Transport: "streamable", ToolHeaders: shared}))(call)
	sender(t, dial(t, Options{URL: srv.URL, Transport: "streamable"}))(call)
	if got := s.header(1, "Mcp-Param-Region"); got != "eu-west-1" {
		t.Errorf("tools/call on a connection sharing the bindings: Mcp-Param-Region %q; want eu-west-1", got)
	}
	if got := s.header(2, "Mcp-Param-Region"); got != "" {
		t.Errorf("tools/call on a connection of its own: Mcp-Param-Region %q; want none (it never saw tools/list)", got)
	}

	shared.learn(map[string][]paramBinding{"sql": nil})
	sender(t, dial(t, Options{URL: srv.URL, Transport: "streamable", ToolHeaders: shared}))(call)
	if got := s.header(3, "Mcp-Param-Region"); got != "" {
		t.Errorf("tools/call after a listing without the annotation: Mcp-Param-Region %q; want none", got)
	}
}

package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/fixture"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// everything returns the argv of @modelcontextprotocol/server-everything
// over stdio, installed by `npm ci --prefix internal/testpeers/npm`. It
// skips when the package is missing, except in CI, where it fails.
func everything(t *testing.T) []string {
	t.Helper()
	js, _ := filepath.Abs("../internal/testpeers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(js); err != nil {
		testenv.Missing(t, "@modelcontextprotocol/server-everything at "+js, "run npm ci --prefix internal/testpeers/npm (.ci/run does)")
	}
	return []string{"node", js, "stdio"}
}

// toolsChanged returns a notification hook and a channel that receives
// notifications/tools/list_changed: server-everything registers its
// capability-dependent tools after initialization and then says so.
func toolsChanged() (func(mcp.JSONRPCNotification), <-chan struct{}) {
	ch := make(chan struct{}, 8)
	return func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/tools/list_changed" {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}, ch
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("no %s within %s", what, waitLimit)
	}
}

func TestEverythingKitchenSinkAnsweredByOperator(t *testing.T) {
	t.Parallel()
	hook, changed := toolsChanged()
	s := startSession(t, sessionConfig{opts: Options{Command: everything(t)}, onNotify: hook})
	waitSignal(t, changed, "tools/list_changed")
	call := s.call("trigger-elicitation-request", map[string]any{}, nil)
	req := s.next("attention.requested")
	if !strings.HasPrefix(req.Subject, "mcp-servers/everything") {
		t.Errorf("subject %q; want the server's serverInfo.name", req.Subject)
	}
	// The real server's schema translates exactly as the golden file
	// (made from the same schema) says.
	var got aep.AttentionRequested
	json.Unmarshal(req.Data, &got)
	golden, err := os.ReadFile(fixture.Path("golden/everything.redacted.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want aep.AttentionRequested
	json.Unmarshal(golden, &want)
	if !reflect.DeepEqual(got.Fields, want.Fields) || got.Prompt != want.Prompt {
		t.Errorf("the live kitchen-sink request differs from the golden translation:\n got %+v\nwant %+v", got.Fields, want.Fields)
	}
	values := map[string]any{
		"name": "Ada Lovelace", "check": true, "firstLine": "Call me Ishmael.", "email": "ada@example.com",
		"homepage": "https://example.com/ada", "birthdate": "1815-12-10", "integer": json.Number("7"),
		"number": json.Number("2.5"), "untitledSingleSelectEnum": "Ross",
		"untitledMultipleSelectEnum": []any{"Piano", "Drums"}, "titledSingleSelectEnum": "hero-3",
		"titledMultipleSelectEnum": []any{"fish-2", "fish-3"}, "legacyTitledEnum": "pet-4",
	}
	// An out-of-range integer is refused first, naming field and rule.
	bad := map[string]any{}
	for k, v := range values {
		bad[k] = v
	}
	bad["integer"] = json.Number("101")
	if res, _ := s.respond(req.ID, aep.Answer{Values: bad}); res.Accepted() || !strings.Contains(string(res.Raw), `field \"integer\": maximum`) {
		t.Fatalf("out-of-range answer: %s", res.Raw)
	}
	if res, _ := s.respond(req.ID, aep.Answer{Values: values}); !res.Accepted() {
		t.Fatalf("answer refused: %s", res.Raw)
	}
	text := strings.Join(texts(s.result(call)), "\n")
	i := strings.Index(text, "Raw result:")
	if i < 0 {
		t.Fatalf("no raw result in %q", text)
	}
	var raw struct {
		Action  string                     `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal([]byte(text[i+len("Raw result:"):]), &raw); err != nil {
		t.Fatalf("raw result: %v", err)
	}
	if raw.Action != "accept" {
		t.Fatalf("action %q", raw.Action)
	}
	wantRaw := map[string]string{
		"name": `"Ada Lovelace"`, "check": `true`, "integer": `7`, "number": `2.5`,
		"untitledMultipleSelectEnum": `["Piano","Drums"]`, "titledMultipleSelectEnum": `["fish-2","fish-3"]`,
		"titledSingleSelectEnum": `"hero-3"`, "legacyTitledEnum": `"pet-4"`, "birthdate": `"1815-12-10"`,
	}
	for k, w := range wantRaw {
		if g := compact(raw.Content[k]); g != w {
			t.Errorf("server received %s = %s; want %s", k, g, w)
		}
	}
	if len(raw.Content) != len(values) {
		t.Errorf("server received %d fields; want %d", len(raw.Content), len(values))
	}
}

func compact(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

type samplingClient struct{}

func (samplingClient) CreateMessage(ctx context.Context, r mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
		Content: mcp.TextContent{Type: "text", Text: "sampled-through-the-bridge"}}, Model: "test-model", StopReason: "endTurn"}, nil
}

func TestEverythingPassThroughFidelity(t *testing.T) {
	t.Parallel()
	argv := everything(t)
	elicit := client.WithElicitationHandler(elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "decline"}}, nil
	}})
	sampling := client.WithSamplingHandler(samplingClient{})
	// Both clients declare both elicitation modes, so the server registers
	// the same tools for each.
	caps := client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}})

	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	direct := directEverything(t, ctx, argv, elicit, sampling, caps)

	hook, changed := toolsChanged()
	progress := make(chan mcp.JSONRPCNotification, 16)
	s := startSession(t, sessionConfig{opts: Options{Command: argv}, clientOpts: []client.ClientOption{elicit, sampling, caps},
		onNotify: func(n mcp.JSONRPCNotification) {
			hook(n)
			if n.Method == "notifications/progress" {
				progress <- n
			}
		}})
	waitSignal(t, changed, "tools/list_changed (bridged)")

	compareLists(t, ctx, direct, s.client)

	t.Run("progress", func(t *testing.T) {
		res := s.result(s.call("trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2}, &mcp.Meta{ProgressToken: "lro-1"}))
		if !strings.Contains(strings.Join(texts(res), ""), "Long running operation completed") {
			t.Fatalf("result %v", texts(res))
		}
		for i := 1; i <= 2; i++ {
			select {
			case n := <-progress:
				if n.Params.AdditionalFields["progressToken"] != "lro-1" || n.Params.AdditionalFields["progress"] != float64(i) {
					t.Errorf("progress %d: %v", i, n.Params.AdditionalFields)
				}
			default:
				t.Fatalf("progress notification %d did not arrive before the result", i)
			}
		}
	})

	t.Run("sampling reaches the client", func(t *testing.T) {
		res := s.result(s.call("trigger-sampling-request", map[string]any{"prompt": "hello"}, nil))
		if txt := strings.Join(texts(res), ""); !strings.Contains(txt, "sampled-through-the-bridge") {
			t.Fatalf("sampling result %q", txt)
		}
	})
}

// directEverything connects an mcp-go client to server-everything with no
// bridge between them, initialized as the bridged client is.
func directEverything(t *testing.T, ctx context.Context, argv []string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClientWithOptions(argv[0], nil, argv[1:])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c = client.NewClient(c.GetTransport(), append([]client.ClientOption{client.WithProtocolVersion("2025-11-25")}, opts...)...)
	hook, changed := toolsChanged()
	c.OnNotification(hook)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-client", Version: "1.2.3"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("direct initialize: %v", err)
	}
	waitSignal(t, changed, "tools/list_changed (direct)")
	return c
}

// compareLists checks that every list the server offers reads the same
// through the bridge as directly, byte for byte once encoded.
func compareLists(t *testing.T, ctx context.Context, direct, bridged *client.Client) {
	t.Helper()
	lists := []struct {
		name string
		get  func(c *client.Client) (any, error)
	}{
		{"tools/list", func(c *client.Client) (any, error) { return c.ListTools(ctx, mcp.ListToolsRequest{}) }},
		{"resources/list", func(c *client.Client) (any, error) { return c.ListResources(ctx, mcp.ListResourcesRequest{}) }},
		{"prompts/list", func(c *client.Client) (any, error) { return c.ListPrompts(ctx, mcp.ListPromptsRequest{}) }},
		{"resources/templates/list", func(c *client.Client) (any, error) {
			return c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		}},
	}
	for _, l := range lists {
		d, err := l.get(direct)
		if err != nil {
			t.Fatalf("direct %s: %v", l.name, err)
		}
		b, err := l.get(bridged)
		if err != nil {
			t.Fatalf("bridged %s: %v", l.name, err)
		}
		dj, _ := json.Marshal(d)
		bj, _ := json.Marshal(b)
		if string(dj) != string(bj) {
			t.Errorf("%s differs through the bridge:\n direct %s\nbridged %s", l.name, dj, bj)
		}
		if len(dj) < 50 {
			t.Errorf("%s is suspiciously empty: %s", l.name, dj)
		}
	}

}

// TestEverythingUpstreamCancel drives the bridge with a raw JSON-RPC client
// to see exactly which bytes come back: after notifications/cancelled for
// a long-running call, the server (which honours cancellation) must send no
// response for it.
func TestEverythingUpstreamCancel(t *testing.T) {
	t.Parallel()
	argv := everything(t)
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := New(Options{Command: argv, Client: c2bR, ClientOut: b2cW, LogDir: t.TempDir(), StopGrace: time.Second, KillTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { err := b.Run(context.Background()); b2cW.Close(); done <- err }()
	lines := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(b2cR)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(c2bW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	await := func(pred func(map[string]any) bool, seen func(map[string]any)) {
		t.Helper()
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatal("bridge closed its output")
				}
				if seen != nil {
					seen(m)
				}
				if pred(m) {
					return
				}
			case <-time.After(waitLimit):
				t.Fatal("timed out waiting for a message")
			}
		}
	}
	isID := func(id float64) func(map[string]any) bool {
		return func(m map[string]any) bool { return m["id"] == id && m["method"] == nil }
	}
	isProgress := func(p float64) func(map[string]any) bool {
		return func(m map[string]any) bool {
			params, _ := m["params"].(map[string]any)
			return m["method"] == "notifications/progress" && params["progress"] == p
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	await(isID(1), nil)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":0.6,"steps":3},"_meta":{"progressToken":"p5"}}}`)
	await(isProgress(1), nil)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user gave up"}}`)
	sawResponse := false
	watch := func(m map[string]any) {
		if m["id"] == float64(5) && m["method"] == nil {
			sawResponse = true
		}
	}
	// The operation keeps sending progress (it ignores the abort) and
	// finishes after step 3; the SDK then suppresses the cancelled
	// response. A ping sent after step 3 is answered after that point.
	await(isProgress(3), watch)
	send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	await(isID(6), watch)
	if sawResponse {
		t.Fatal("the server answered a request the client cancelled: the cancellation did not reach it")
	}
	c2bW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// startEverythingHTTP runs server-everything with its streamableHttp or sse
// transport on a port reserved for it (it takes its port from PORT and
// says the number it was given, so port 0 would not tell the test where
// it listens) and returns its base URL once it listens.
func startEverythingHTTP(t *testing.T, mode string) string {
	t.Helper()
	argv := everything(t)
	port := testenv.ReservePort(t)
	cmd := exec.Command(argv[0], argv[1], mode)
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), fmt.Sprint(port)) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(waitLimit):
		t.Fatalf("server-everything (%s) did not start", mode)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

func answerKitchenSink(t *testing.T, s *session, changed <-chan struct{}, delay time.Duration) {
	t.Helper()
	waitSignal(t, changed, "tools/list_changed")
	call := s.call("trigger-elicitation-request", map[string]any{}, nil)
	req := s.next("attention.requested")
	if delay > 0 {
		time.Sleep(delay) // the scenario itself: a human answering late
	}
	if res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"name": "Ada", "integer": json.Number("7")}}); !res.Accepted() {
		t.Fatalf("answer: %s", res.Raw)
	}
	text := strings.Join(texts(s.result(call)), "\n")
	if !strings.Contains(text, `"name": "Ada"`) || !strings.Contains(text, `"integer": 7`) || !strings.Contains(text, `"action": "accept"`) {
		t.Fatalf("the server's result: %s", text)
	}
}

func TestRemoteEverything(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mode, path, transport string }{
		{"streamableHttp", "/mcp", ""},
		{"sse", "/sse", "sse"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			base := startEverythingHTTP(t, tc.mode)
			hook, changed := toolsChanged()
			progress := make(chan mcp.JSONRPCNotification, 8)
			s := startSession(t, sessionConfig{opts: Options{URL: base + tc.path, Transport: tc.transport},
				onNotify: func(n mcp.JSONRPCNotification) {
					hook(n)
					if n.Method == "notifications/progress" {
						progress <- n
					}
				}})
			answerKitchenSink(t, s, changed, 0)
			tools, err := s.client.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil || len(tools.Tools) < 10 {
				t.Fatalf("tools/list: %v %v", len(tools.Tools), err)
			}
			if _, err := s.client.ListResources(context.Background(), mcp.ListResourcesRequest{}); err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			if _, err := s.client.ListPrompts(context.Background(), mcp.ListPromptsRequest{}); err != nil {
				t.Fatalf("prompts/list: %v", err)
			}
			s.result(s.call("trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2}, &mcp.Meta{ProgressToken: "p"}))
			for i := 0; i < 2; i++ {
				select {
				case <-progress:
				default:
					t.Fatalf("progress %d did not arrive before the result", i+1)
				}
			}
		})
	}
}

// TestRemoteAnswerAfter35s answers 35 s after the question: past mcp-go's
// own 30 s cap on server-to-client requests, which is why the bridge has
// its own transports.
func TestRemoteAnswerAfter35s(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes 35 s; CI runs it")
	}
	base := startEverythingHTTP(t, "streamableHttp")
	hook, changed := toolsChanged()
	s := startSession(t, sessionConfig{opts: Options{URL: base + "/mcp", Keepalive: 5 * time.Second}, onNotify: hook})
	answerKitchenSink(t, s, changed, 35*time.Second)
}

// flakyServer is a streamable-HTTP MCP server that drops the event stream
// of a tools/call right after sending its elicitation/create, keeps the
// call alive, and continues the stream on a GET that resumes with
// Last-Event-ID, as the transport spec's resumability section describes.
type flakyServer struct {
	mu      sync.Mutex
	callID  json.RawMessage
	result  chan string // the call's result event, for the resumed stream
	answer  chan json.RawMessage
	dropped bool
}

func (f *flakyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case "DELETE":
		w.WriteHeader(http.StatusOK)
		return
	case "GET":
		if r.Header.Get("Last-Event-ID") != "e1" {
			w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // only this handler writes to its stream
		case ev := <-f.result:
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
		<-r.Context().Done()
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &m)
	switch {
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "flaky-1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flaky","version":"1"}}}`, m.ID)
	case m.Method == "tools/call":
		f.mu.Lock()
		f.callID = m.ID
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"q1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"n?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}}}\n\n")
		w.(http.Flusher).Flush()
		f.mu.Lock()
		f.dropped = true
		f.mu.Unlock()
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack() // drop the stream mid-question
		conn.Close()
		go f.finish()
	case m.Method == "" && string(m.ID) == `"q1"`:
		f.answer <- m.Result
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// finish waits for the answer, then hands the call's result to the
// resumed stream.
func (f *flakyServer) finish() {
	answer := <-f.answer
	f.mu.Lock()
	id := f.callID
	f.mu.Unlock()
	text, _ := json.Marshal(string(answer))
	f.result <- fmt.Sprintf("id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%s}]}}\n\n", id, text)
}

func TestRemoteStreamDropResumes(t *testing.T) {
	t.Parallel()
	f := &flakyServer{result: make(chan string, 1), answer: make(chan json.RawMessage, 1)}
	srv := httptest.NewServer(f)
	defer srv.Close()
	s := startSession(t, sessionConfig{opts: Options{URL: srv.URL + "/mcp"}})
	call := s.call("ask", nil, nil)
	req := s.next("attention.requested")
	if res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"n": json.Number("7")}}); !res.Accepted() {
		t.Fatalf("answer: %s", res.Raw)
	}
	if got := toolText(t, s.result(call)); got != `{"action":"accept","content":{"n":7}}` {
		t.Fatalf("the server got %s", got)
	}
	f.mu.Lock()
	dropped := f.dropped
	f.mu.Unlock()
	if !dropped {
		t.Fatal("the stream was never cut; the test proved nothing")
	}
}

func TestRemoteUnauthorizedSaysToPassTheHeader(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	err := initThroughBridge(t, Options{URL: srv.URL + "/mcp"})
	if err == nil || !strings.Contains(err.Error(), "--header 'Authorization") {
		t.Fatalf("got %v", err)
	}
	// The header flag reaches the server.
	err = initThroughBridge(t, Options{URL: srv.URL + "/mcp", Header: http.Header{"Authorization": {"Bearer right"}}})
	if err == nil || !strings.Contains(err.Error(), "418") {
		t.Fatalf("with the header: %v", err)
	}
}

func TestRemoteStaleSessionTellsTheClientToStartANewOne(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == "GET":
			w.WriteHeader(http.StatusMethodNotAllowed)
		case strings.Contains(string(body), `"initialize"`):
			w.Header().Set("Mcp-Session-Id", "old")
			w.Header().Set("Content-Type", "application/json")
			var m struct{ ID json.RawMessage }
			json.Unmarshal(body, &m)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`, m.ID)
		case strings.Contains(string(body), `"notifications/`):
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusNotFound) // the session expired
		}
	}))
	defer srv.Close()
	s := startSession(t, sessionConfig{opts: Options{URL: srv.URL + "/mcp"}})
	_, err := s.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err == nil || !strings.Contains(err.Error(), "starts a new session") {
		t.Fatalf("got %v", err)
	}
	s.close()
}

func TestRemoteGarbageIsNotJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "<html>not json</html>")
	}))
	defer srv.Close()
	if err := initThroughBridge(t, Options{URL: srv.URL + "/mcp"}); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("got %v", err)
	}
}

func TestRemoteConnectionRefused(t *testing.T) {
	t.Parallel()
	if err := initThroughBridge(t, Options{URL: "http://127.0.0.1:1/mcp"}); err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Fatalf("got %v", err)
	}
}

func TestRemoteServerDiesMidCall(t *testing.T) {
	t.Parallel()
	base := startEverythingHTTP(t, "streamableHttp")
	target, _ := url.Parse(base)
	var mu sync.Mutex
	var kill func()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		k := kill
		mu.Unlock()
		if k != nil && r.Method == "POST" {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := startSession(t, sessionConfig{opts: Options{URL: srv.URL + "/mcp"}})
	mu.Lock()
	kill = func() {}
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "x"}
	_, err := s.client.CallTool(ctx, req)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "stopped answering") {
		t.Fatalf("got %v; want a JSON-RPC error that says the server stopped answering", err)
	}
	s.close() // before the test server closes: the session holds its GET stream
}

// initThroughBridge initializes an mcp-go client through a bridge fronting
// opts.URL and returns the error the client sees.
func initThroughBridge(t *testing.T, opts Options) error {
	t.Helper()
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	opts.Client, opts.ClientOut, opts.LogDir = c2bR, b2cW, t.TempDir()
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { b.Run(ctx); b2cW.Close(); close(done) }()
	defer func() { c2bW.Close(); <-done }()
	cl := client.NewClient(transportIO(b2cR, c2bW), client.WithProtocolVersion("2025-11-25"))
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ictx, icancel := context.WithTimeout(ctx, waitLimit)
	defer icancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "c", Version: "1"}
	_, err = cl.Initialize(ictx, init)
	return err
}

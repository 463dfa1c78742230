package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testpeers/record"
)

// Real MCP peers that nobody here wrote, as the bridge's tests run them:
// servers of the official Go SDK (go-sdk), of mcp-go and of the
// TypeScript SDK, over stdio or streamable HTTP, and go-sdk clients with
// and without an elicitation handler. What a server received is kept
// byte for byte: a stdio peer appends its stdin to a file (AEP_TEST_RECORD),
// and an HTTP peer sits behind a recording proxy.

// gosdkBin is the go-sdk test server, built once by TestMain.
var gosdkBin string

// httpPeer is a server process that listens on HTTP, shared by the tests
// that use it and stopped when the test that started it ends.
type httpPeer struct {
	url string
}

// startHTTPPeer runs argv with env and waits until it has printed a line
// containing each of ready; the URL is what follows "listening on " on
// such a line, if anything. Failures stop t; the process lives until
// owner ends, so tests running in parallel under owner can share it.
func startHTTPPeer(t, owner *testing.T, argv, env []string, ready ...string) *httpPeer {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw // both: the TypeScript examples print on stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		left, url := slices.Clone(ready), ""
		for sc.Scan() {
			line := sc.Text()
			if _, after, ok := strings.Cut(line, "listening on "); ok && url == "" {
				url = strings.TrimSpace(after)
			}
			n := len(left)
			left = slices.DeleteFunc(left, func(r string) bool { return strings.Contains(line, r) })
			if n > 0 && len(left) == 0 {
				found <- url
			}
		}
	}()
	owner.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
	})
	select {
	case u := <-found:
		return &httpPeer{url: u}
	case <-time.After(waitLimit):
		t.Fatalf("%v did not start: it printed no line with each of %q", argv, ready)
	}
	return nil
}

// freePort returns a TCP port free at the time of the call.
// examplePort is a port for one of the TypeScript SDK's example servers,
// which take their port from the environment and write it into the URLs
// they serve (the URL example's OAuth metadata), so they cannot take
// port 0: one nothing else is given while the test runs.
func examplePort(t *testing.T) int {
	t.Helper()
	return testenv.ReservePort(t)
}

// recordingProxy is a reverse proxy in front of an HTTP peer that keeps
// every body POSTed through it, so a test sees exactly what the server
// received.
type recordingProxy struct {
	url    string
	mu     sync.Mutex
	bodies [][]byte
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.URL.Path = u.Path
			r.Out.Host = u.Host
		},
		FlushInterval: -1, // event streams pass at once
		// A stream the bridge closes (the end of a session) is no error
		// worth printing; what matters is checked on what was recorded.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			p.mu.Lock()
			p.bodies = append(p.bodies, body)
			p.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL + u.Path
	return p
}

func (p *recordingProxy) received() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.bodies...)
}

// stdinRecord is where a stdio peer appends what it reads.
type stdinRecord string

func newStdinRecord(t *testing.T) stdinRecord {
	return stdinRecord(filepath.Join(t.TempDir(), "stdin.jsonl"))
}

func (r stdinRecord) env() []string { return append(os.Environ(), record.Env+"="+string(r)) }

func (r stdinRecord) received() [][]byte {
	b, _ := os.ReadFile(string(r))
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// receivedElicitResults returns the ElicitResults among the messages a
// server received, byte for byte as they arrived: the result of a
// response to its elicitation/create, or each inputResponses value of a
// retried request (MCP 2026-07-28).
func receivedElicitResults(msgs [][]byte) []string {
	var out []string
	for _, m := range msgs {
		var msg struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Params struct {
				InputResponses map[string]json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &msg) != nil {
			continue
		}
		switch {
		case msg.Method == "" && bytes.Contains(msg.Result, []byte(`"action"`)):
			out = append(out, string(msg.Result))
		case len(msg.Params.InputResponses) > 0:
			for _, v := range msg.Params.InputResponses {
				out = append(out, string(v))
			}
		}
	}
	return out
}

// sdkSession is one bridged session driven by a go-sdk client.
type sdkSession struct {
	t      *testing.T
	b      *Bridge
	cs     *sdk.ClientSession
	events *bus.Subscription
	runErr chan error
	cancel context.CancelFunc
	once   sync.Once
}

// startSDKSession runs a bridge with o and connects a go-sdk client to it
// over stdio, asking for protocol version era. handler, if set, makes the
// client elicit itself.
func startSDKSession(t *testing.T, o Options, era string, handler func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdkSession {
	t.Helper()
	r := runBridge(t, o, nil)
	s := &sdkSession{t: t, b: r.b, events: r.events, runErr: r.runErr, cancel: r.cancel}
	ctx, b2cR, c2bW := r.ctx, r.fromBridge, r.toBridge
	t.Cleanup(s.close)
	c := sdk.NewClient(&sdk.Implementation{Name: "gosdk-client", Version: "1.8.0"}, &sdk.ClientOptions{ElicitationHandler: handler})
	cctx, ccancel := context.WithTimeout(ctx, waitLimit)
	defer ccancel()
	cs, err := c.Connect(cctx, &sdk.IOTransport{Reader: b2cR, Writer: c2bW}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connecting a go-sdk client (%s) through the bridge: %v", era, err)
	}
	s.cs = cs
	return s
}

// close ends the session as a client that leaves, and checks the log.
func (s *sdkSession) close() {
	s.once.Do(func() {
		if s.cs != nil {
			s.cs.Close()
		}
		select {
		case <-s.runErr:
		case <-time.After(waitLimit):
			s.t.Errorf("the bridge did not stop after the client left")
		}
		s.cancel()
		checkSessionLog(s.t, s.b)
	})
}

// next waits for the next event of type typ, skipping others.
func (s *sdkSession) next(typ string) aep.Event {
	s.t.Helper()
	return nextEvent(s.t, s.events, typ)
}

// respond answers question id as an operator.
func (s *sdkSession) respond(id string, a aep.Answer) string {
	s.t.Helper()
	res, err := s.b.Intake().Submit(command(s.b.Session(), id, a), controlSender)
	if err != nil {
		s.t.Fatalf("Submit: %v", err)
	}
	return string(res.Raw)
}

// call runs tools/call in the background.
func (s *sdkSession) call(name string, args map[string]any) <-chan sdkCall {
	ch := make(chan sdkCall, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
		defer cancel()
		res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		ch <- sdkCall{res, err}
	}()
	return ch
}

type sdkCall struct {
	res *sdk.CallToolResult
	err error
}

// directVersion connects a go-sdk client straight to a server (no bridge)
// and returns the protocol version they negotiate.
func directVersion(t *testing.T, tr sdk.Transport, era string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "gosdk-client", Version: "1.8.0"}, nil)
	cs, err := c.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("a direct go-sdk client (%s): %v", era, err)
	}
	defer cs.Close()
	return cs.InitializeResult().ProtocolVersion
}

func (c sdkCall) text() string {
	if c.res == nil || len(c.res.Content) == 0 {
		return ""
	}
	if tc, ok := c.res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%T", c.res.Content[0])
}

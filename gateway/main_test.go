package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// serverBin is the mcp-go elicit test server and gosdkBin go-sdk's test
// server, built once by TestMain.
var serverBin, gosdkBin string

func TestMain(m *testing.M) {
	dir, err := testenv.TempRoot() // Main removes it
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin, gosdkBin = filepath.Join(dir, "elicitserver"), filepath.Join(dir, "gosdkpeer")
	for bin, pkg := range map[string]string{serverBin: "../internal/testpeers/elicitserver", gosdkBin: "../internal/testpeers/gosdkpeer"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building the test server %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	testenv.MainThen(m, testnats.Stop) // the cluster the fleet tests share stops before goleak looks
}

// waitLimit bounds every wait in these tests; it is a failure guard, not
// a synchronisation: tests wait on events and results.
const waitLimit = 60 * time.Second

const (
	aepToken = "aep-test-token"
	mcpToken = "mcp-test-token"
)

// gw is a gateway under test: a bridge host with its AEP endpoint and a
// gateway serving MCP clients, both on loopback ports.
type gw struct {
	t        *testing.T
	host     *bridge.Host
	srv      *Server
	mcpURL   string // http://127.0.0.1:port/mcp
	base     string // http://127.0.0.1:port
	endpoint string // the AEP endpoint's base URL
}

// startGateway runs a gateway with o (Host, Token and an upstream filled
// in when unset) and stops it when the test ends.
func startGateway(t *testing.T, o Options) *gw {
	t.Helper()
	if o.Token == "" {
		o.Token = mcpToken
	}
	return startGatewayAuth(t, o)
}

// startGatewayAuth is startGateway with o.Token as it is: "" runs the
// gateway without authentication (--mcp-auth none).
func startGatewayAuth(t *testing.T, o Options) *gw {
	t.Helper()
	return startGatewayHost(t, o, bridge.HostOptions{})
}

// startGatewayHost is startGatewayAuth on a host of ho, its listener and
// token filled in.
func startGatewayHost(t *testing.T, o Options, ho bridge.HostOptions) *gw {
	t.Helper()
	aepLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ho.Listener, ho.Token = aepLn, aepToken
	host, err := bridge.NewHost(ho)
	if err != nil {
		t.Fatal(err)
	}
	o.Host = host
	if len(o.Session.Command) == 0 && o.Session.URL == "" {
		o.Session.Command = []string{serverBin}
	}
	if o.Session.LogDir == "" {
		o.Session.LogDir = t.TempDir()
	}
	o.Session.StopGrace, o.Session.KillTimeout = 2*time.Second, 2*time.Second
	srv, err := New(o)
	if err != nil {
		host.Close(context.Background())
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	g := &gw{t: t, host: host, srv: srv, base: "http://" + ln.Addr().String(), endpoint: "http://" + host.Addr()}
	g.mcpURL = g.base + "/mcp"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("closing the gateway: %v", err)
		}
		<-served
		host.Close(ctx)
	})
	return g
}

// operatorClient is an operator on the host's AEP endpoint.
func (g *gw) operatorClient() *operator.Client {
	return &operator.Client{Endpoint: g.endpoint, Token: aepToken, Agent: "test-operator"}
}

// watcher follows the AEP endpoint's stream of questions and sessions, as
// an operator's inbox does, and hands out what it saw.
type watcher struct {
	mu        sync.Mutex
	changed   chan struct{}
	questions []*aep.Event
	clients   map[string]string // AEP session → client name from session.started
	// named maps an AEP session to the named client its events carry
	// (aep.ExtClient), from the first event that carries one; disagreeing
	// lists the sessions whose events named two, or none on some.
	named       map[string]string
	disagreeing map[string]bool
	ended       map[string]string // AEP session → session.ended reason
	resolved    map[string]string // question id → resolution or "timeout"
	by          map[string]string // question id → the by of its attention.answered
}

// watch starts a watcher; it stops when the test ends.
func (g *gw) watch() *watcher {
	g.t.Helper()
	w := &watcher{changed: make(chan struct{}, 1), clients: map[string]string{}, ended: map[string]string{}, resolved: map[string]string{},
		named: map[string]string{}, disagreeing: map[string]bool{}, by: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// from=all replays what happened before the stream opened, so no
	// event is missed whenever the subscription takes effect.
	q := operator.StreamOptions{Filter: json.RawMessage(`{"type":["attention.*","session.*"]}`), Capture: "full", From: aep.FromAll}
	go func() {
		defer close(done)
		err := g.operatorClient().Stream(ctx, q, func(ev *aep.Event, _ []byte) bool {
			w.add(ev)
			return true
		})
		if err != nil && ctx.Err() == nil {
			g.t.Errorf("operator stream: %v", err)
		}
	}()
	g.t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w *watcher) add(ev *aep.Event) {
	w.mu.Lock()
	var named string
	json.Unmarshal(ev.Extensions[aep.ExtClient], &named)
	if prev, seen := w.named[ev.Session]; !seen {
		w.named[ev.Session] = named
	} else if prev != named && !strings.HasPrefix(ev.Type, "control.") {
		w.disagreeing[ev.Session] = true // commands are the operators' events, not the session's
	}
	switch ev.Type {
	case "attention.requested":
		w.questions = append(w.questions, ev)
	case "session.started":
		var d struct {
			Client struct {
				Name string `json:"name"`
			} `json:"client"`
		}
		json.Unmarshal(ev.Data, &d)
		w.clients[ev.Session] = d.Client.Name
	case "session.ended":
		var d struct {
			Reason string `json:"reason"`
		}
		json.Unmarshal(ev.Data, &d)
		w.ended[ev.Session] = d.Reason
	case "attention.resolved":
		var d struct {
			Resolution string `json:"resolution"`
		}
		json.Unmarshal(ev.Data, &d)
		w.resolved[ev.Subject] = d.Resolution
	case "attention.answered":
		var d struct {
			By string `json:"by"`
		}
		json.Unmarshal(ev.Data, &d)
		w.by[ev.Subject] = d.By
	case "attention.timeout":
		w.resolved[ev.Subject] = "timeout"
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds over the watcher's state.
func (w *watcher) waitFor(t *testing.T, what string, cond func(w *watcher) bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		w.mu.Lock()
		ok := cond(w)
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-w.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// question waits for a question whose prompt contains text.
func (w *watcher) question(t *testing.T, text string) *aep.Event {
	t.Helper()
	var q *aep.Event
	w.waitFor(t, "a question containing "+text, func(w *watcher) bool {
		for _, ev := range w.questions {
			var d aep.AttentionRequested
			json.Unmarshal(ev.Data, &d)
			if strings.Contains(d.Prompt, text) {
				q = ev
				return true
			}
		}
		return false
	})
	return q
}

// answer answers question q as an operator through the AEP endpoint.
func (g *gw) answer(t *testing.T, q *aep.Event, a aep.Answer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ack, err := g.operatorClient().Respond(ctx, operator.Question{ID: q.ID, Session: q.Session}, a, waitLimit, nil)
	if err != nil {
		t.Fatalf("answering %s: %v", q.ID, err)
	}
	if !ack.Accepted {
		t.Fatalf("answer to %s refused: %s %s", q.ID, ack.Reason, ack.Detail)
	}
}

// request sends one raw HTTP request to the gateway.
func (g *gw) request(t *testing.T, method, path string, hdr http.Header, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, g.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// sessionOpts is the bridge options of a test session with route.
func sessionOpts(route elicit.Route) bridge.Options {
	return bridge.Options{Route: route}
}

// bridgeCommand is the bridge options of a session whose upstream is argv.
func bridgeCommand(argv []string) bridge.Options {
	return bridge.Options{Command: argv, Route: elicit.RouteRemote}
}

// waitSessions waits until the gateway serves n sessions.
func (g *gw) waitSessions(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for g.srv.Sessions() != n {
		select {
		case <-g.srv.forgot:
		case <-deadline:
			t.Fatalf("live sessions: got %d; want %d", g.srv.Sessions(), n)
		}
	}
}

// sharedSessions checks that the gateway serves n sessions, each a
// shared session of stateless requests with none in flight: what is
// left once a spawned server's stateless clients got their answers. A
// session whose server exited stays in the table until its runSession
// has returned, after the requests it failed were answered: it is
// waited for.
func (g *gw) sharedSessions(t *testing.T, n int) {
	t.Helper()
	g.waitSessions(t, n)
	g.srv.mu.Lock()
	defer g.srv.mu.Unlock()
	if len(g.srv.sessions) != n {
		t.Errorf("live sessions: got %d; want %d shared ones", len(g.srv.sessions), n)
	}
	for _, sess := range g.srv.sessions {
		sess.mu.Lock()
		kind, inflight := sess.kind, len(sess.byRequest)
		sess.mu.Unlock()
		if kind != shared || inflight != 0 {
			t.Errorf("a live session of kind %d has %d requests in flight; want a shared one with none", kind, inflight)
		}
	}
}

// jsonDecode is json.Unmarshal, for helpers that report their own errors.
func jsonDecode(b []byte, v any) error { return json.Unmarshal(b, v) }

// answerCancel is an operator's cancel.
var answerCancel = aep.Answer{Option: "cancel"}

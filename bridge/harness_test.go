package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/logcheck"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
)

// serverBin is the mcp-go elicit test server, built once by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	if dir := os.Getenv(logWriterEnv); dir != "" {
		os.Exit(logWriter(dir)) // the subprocess of the kill-mid-write test
	}
	if n := os.Getenv(rawServerEnv); n != "" {
		os.Exit(rawStdioServer(n)) // the server of the size tests over stdio
	}
	dir, err := testenv.TempRoot() // testenv.Main removes it, whatever happens
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "elicitserver")
	gosdkBin = filepath.Join(dir, "gosdkpeer")
	for bin, pkg := range map[string]string{serverBin: "../internal/testpeers/elicitserver", gosdkBin: "../internal/testpeers/gosdkpeer"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building the test peer %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	testenv.MainThen(m, testnats.Stop) // every session, host and link a test started must be gone, and the shared cluster
}

// waitLimit bounds every wait in these tests; it is a failure guard, not a
// synchronisation: tests wait on events and results.
const waitLimit = 30 * time.Second

// session is one bridged MCP session under test: a real bridge in front of
// a real server process, driven by an mcp-go client over pipes.
type session struct {
	t      *testing.T
	b      *Bridge
	client *client.Client
	events *bus.Subscription
	runErr chan error
	cancel context.CancelFunc
	closed bool
}

type sessionConfig struct {
	opts       Options
	clientOpts []client.ClientOption
	caps       mcp.ClientCapabilities
	// onNotify, if set, sees every notification from the first one.
	onNotify func(mcp.JSONRPCNotification)
	// protocol is the revision the client asks for; "" means 2025-11-25.
	protocol string
	// host, if set, runs the session (Host.NewSession); nil means a
	// session with a hub of its own (New).
	host *Host
}

func startSession(t *testing.T, cfg sessionConfig) *session {
	t.Helper()
	o := cfg.opts
	if o.Command == nil {
		o.Command = []string{serverBin}
	}
	r := runBridge(t, o, cfg.host)
	s := &session{t: t, b: r.b, events: r.events, runErr: r.runErr, cancel: r.cancel}
	ctx, b2cR, c2bW := r.ctx, r.fromBridge, r.toBridge
	pin := "2025-11-25" // the 2025 flow; see DESIGN "Protocol eras"
	if cfg.protocol != "" {
		pin = cfg.protocol
	}
	// mcp-go's client gives server/discover 5 s before it decides the
	// server predates 2026-07-28 and falls back to initialize: a guess
	// about the server, which a loaded machine can make wrong. The tests
	// bound the probe by waitLimit, as every other wait.
	opts := append([]client.ClientOption{client.WithProtocolVersion(pin), client.WithDiscoverTimeout(waitLimit)}, cfg.clientOpts...)
	tr := transport.NewIO(b2cR, c2bW, nil)
	s.client = client.NewClient(tr, opts...)
	if cfg.onNotify != nil {
		s.client.OnNotification(cfg.onNotify)
	}
	// The client's transport lives as long as the session: Start's context
	// is the one its request handlers (elicitation, sampling) run under.
	if err := s.client.Start(ctx); err != nil {
		t.Fatalf("client start: %v", err)
	}
	ictx, icancel := context.WithTimeout(ctx, waitLimit)
	defer icancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = "2025-11-25"
	if cfg.protocol != "" {
		req.Params.ProtocolVersion = cfg.protocol
	}
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-client", Version: "1.2.3"}
	req.Params.Capabilities = cfg.caps
	if _, err := s.client.Initialize(ictx, req); err != nil {
		t.Fatalf("initialize through the bridge: %v", err)
	}
	t.Cleanup(func() { s.close() })
	return s
}

// bridgeRun is a bridge session running on pipes, for a client to drive.
type bridgeRun struct {
	b      *Bridge
	events *bus.Subscription
	runErr chan error
	ctx    context.Context
	cancel context.CancelFunc
	// fromBridge is what the bridge writes to its client; toBridge is
	// where the client writes.
	fromBridge *io.PipeReader
	toBridge   *io.PipeWriter
}

// runBridge starts a session with o (on host, when set) whose client
// side is a pair of pipes, and subscribes to its events.
func runBridge(t *testing.T, o Options, host *Host) *bridgeRun {
	t.Helper()
	if o.LogDir == "" {
		o.LogDir = t.TempDir()
	}
	o.StopGrace, o.KillTimeout = 2*time.Second, 2*time.Second
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	o.Client, o.ClientOut = c2bR, b2cW
	var b *Bridge
	var err error
	if host != nil {
		b, err = host.NewSession(o)
	} else {
		b, err = New(o)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r := &bridgeRun{b: b, runErr: make(chan error, 1), fromBridge: b2cR, toBridge: c2bW}
	r.events = b.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Session == b.Session() }, 4096)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go func() {
		err := b.Run(r.ctx)
		b2cW.Close()
		r.runErr <- err
	}()
	return r
}

// close ends the session as a client that leaves, and validates the log.
func (s *session) close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.client.Close()
	var err error
	select {
	case err = <-s.runErr:
	case <-time.After(waitLimit):
		s.t.Errorf("bridge did not stop after the client left")
	}
	s.cancel()
	s.checkLog()
	return err
}

func (s *session) checkLog() *logcheck.Report {
	s.t.Helper()
	return checkSessionLog(s.t, s.b)
}

// checkSessionLog validates a session's log, which must end the session
// once.
func checkSessionLog(t *testing.T, b *Bridge) *logcheck.Report {
	t.Helper()
	rep, err := logcheck.File(b.LogPath())
	if err != nil {
		t.Errorf("session log %s is invalid: %v", b.LogPath(), err)
		return nil
	}
	if rep.Types["session.ended"] != 1 {
		t.Errorf("session log has %d session.ended; want 1", rep.Types["session.ended"])
	}
	return rep
}

// next waits for the next event of type typ (skipping others).
func (s *session) next(typ string) aep.Event {
	s.t.Helper()
	return nextEvent(s.t, s.events, typ)
}

// nextEvent waits for the next event of type typ on sub, skipping others.
func nextEvent(t *testing.T, sub *bus.Subscription, typ string) aep.Event {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case d, ok := <-sub.C:
			if !ok {
				t.Fatalf("event stream ended waiting for %s: %v", typ, sub.Err())
			}
			if d.Event.Type == typ {
				return d.Event
			}
		case <-deadline:
			t.Fatalf("no %s event within %s", typ, waitLimit)
		}
	}
}

// call runs tools/call in the background and returns a channel with its
// result.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

func (s *session) call(name string, args map[string]any, meta *mcp.Meta) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		req.Params.Meta = meta
		res, err := s.client.CallTool(ctx, req)
		ch <- callResult{res, err}
	}()
	return ch
}

func (s *session) result(ch <-chan callResult) *mcp.CallToolResult {
	s.t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			s.t.Fatalf("tools/call: %v", r.err)
		}
		return r.res
	case <-time.After(2 * waitLimit):
		s.t.Fatalf("tools/call did not return")
	}
	return nil
}

// elicitResult decodes the ask tool's text: the ElicitResult it received.
func elicitResult(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	text := toolText(t, res)
	var out map[string]any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("tool result %q is not an ElicitResult: %v", text, err)
	}
	return out
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("empty tool result")
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("tool result %T is not text", res.Content[0])
	}
	return tc.Text
}

// respond submits an operator's control.attention.respond.
func (s *session) respond(subject string, answer aep.Answer) (control.Result, aep.Event) {
	s.t.Helper()
	cmd := command(s.b.Session(), subject, answer)
	res, err := s.b.Intake().Submit(cmd, control.Sender{Authenticated: true})
	if err != nil {
		s.t.Fatalf("Submit: %v", err)
	}
	return res, cmd
}

// command builds an operator's control.attention.respond.
func command(session, subject string, answer aep.Answer) aep.Event {
	data, _ := json.Marshal(aep.Respond{Answer: answer})
	return aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Subject: subject, Cause: subject,
		Time: aep.FormatTime(time.Now()), Source: "aep://test/agent/operator", Agent: "operator", Session: session,
		Capture: aep.CaptureRedacted, Data: data}
}

var controlSender = control.Sender{Authenticated: true}

// lockedWriter collects log output from several goroutines.
type lockedWriter struct{ testenv.Buffer }

// waitFor blocks until the log contains s, waking on every write.
func (w *lockedWriter) waitFor(t *testing.T, s string) {
	t.Helper()
	w.WaitFor(t, s, waitLimit)
}

func textLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func transportIO(r io.Reader, w io.WriteCloser) *transport.Stdio { return transport.NewIO(r, w, nil) }

// serve puts the session's AEP endpoint (with the inbox at /) on a test
// server, with the session's claim, and returns its base URL. Both stop
// before the session is checked: the endpoint closes first.
func (s *session) serve(token string) string {
	s.t.Helper()
	ep, err := endpoint.New(endpoint.Options{Token: token, Hub: s.b.Hub(), Root: inbox.Handler()})
	if err != nil {
		s.t.Fatal(err)
	}
	ep.AddClaim(s.b.Claim("test"))
	srv := httptest.NewServer(ep.Handler())
	s.t.Cleanup(func() { ep.Close(); srv.Close() })
	return srv.URL
}

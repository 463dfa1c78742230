package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
	"github.com/agenteventprotocol/aep-mcp-bridge/script"
	"github.com/agenteventprotocol/aep-mcp-bridge/upstream"
)

// Options configure a bridged session. Zero values mean the documented
// defaults.
type Options struct {
	// Command is the upstream server's argv. Required unless URL is set.
	Command []string
	// URL is a remote upstream's MCP endpoint (--url); Header is added to
	// its requests (--header); Transport is "streamable", "sse" or ""
	// (automatic).
	URL       string
	Header    http.Header
	Transport string
	// ToolHeaders, for a remote upstream, shares the x-mcp-header
	// bindings its connection learns with the other sessions' connections
	// to the same server (upstream.Options.ToolHeaders).
	ToolHeaders *upstream.ToolHeaders
	// Env is the spawned upstream's environment; nil means the bridge's
	// own. Either way the bridge's credentials and the variables it read
	// a secret from are removed from it (upstream.Start).
	Env []string
	// Client is the MCP client's stream; ClientOut where its messages go.
	// Both are unused when ClientConn is set. A Client that can wait for
	// input either on its own thread or in Go's poller (waitSharer, as
	// internal/waitread's Reader) is told which, before each wait.
	Client    io.Reader
	ClientOut io.Writer
	// ClientConn, if set, is the MCP client's side as a stream of raw
	// JSON-RPC messages, instead of Client and ClientOut: a transport of
	// the caller's own, such as the gateway's per-session connection. Run
	// closes it when the session ends. When it also implements
	// RelatedWriter, it is told which client request each message of a
	// remote upstream relates to.
	ClientConn ClientConn
	// ServerStderr receives the upstream's stderr. Nil means os.Stderr.
	ServerStderr io.Writer
	// Agent is the AEP agent name; "" means "aep-mcp-bridge".
	Agent string
	// ClientIdentity is the name of the named client (identity.Client)
	// the session serves, as the gateway authenticated it; every event of
	// the session carries it as the aep.ExtClient extension attribute,
	// and the answers the client gives itself are by "client:NAME".
	// "" means none: the session serves the holder of a shared token, or
	// its own process's client.
	ClientIdentity string
	// Name overrides the server's display name; "" means the name the
	// server gives itself (serverInfo.name).
	Name string
	// Timeout is how long a question waits; 0 means 10m.
	Timeout time.Duration
	// Keepalive is the progress interval while a question waits; 0 disables.
	Keepalive time.Duration
	// LogDir holds the JSONL session logs; "" writes no log.
	LogDir string
	// Capture and AttentionCapture are the capture ceilings; 0 means
	// metadata and redacted.
	Capture, AttentionCapture aep.Capture
	// Redact configures the redaction pipeline; the zero value is the
	// default pipeline with no declared secrets.
	Redact aep.RedactOptions
	// Route says who answers; the zero value is elicit.RouteBoth.
	Route elicit.Route
	// Host names this machine in source URIs; "" means os.Hostname.
	Host string
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// StopGrace is how long the server gets after its stdin closes before
	// SIGTERM; 0 means 2s. KillTimeout is how long after SIGTERM before
	// SIGKILL; 0 means 5s.
	StopGrace, KillTimeout time.Duration
	// Sinks receive every event besides the log and the hub; nil means
	// none (a Host adds its relay links).
	Sinks []bus.Sink
	// Answers are scripted answer rules (--answers); nil means none.
	Answers *script.Rules
	// AnswersOnly cancels questions no rule answers (--answers-only).
	AnswersOnly bool
	// Policy is the approval policy for tool calls (--policy); nil passes
	// every call. A reload of the Reloader applies to the calls that
	// arrive after it.
	Policy *policy.Reloader
	// SharedClient says that ClientConn carries the requests of many
	// clients (the gateway's shared session of stateless requests): the
	// proxy gives each input_required round the client also gets a
	// requestState of its own (elicit.Options.OwnStates), since the
	// server may hand equal ones to different requests.
	SharedClient bool

	// hub and host are set by Host.NewSession; a session made with New
	// alone has a hub of its own.
	hub  *bus.Hub
	sink bus.Sink // where the session's events reach hub: the plane's sink
	host *Host
}

// Bridge is one bridged MCP session: one client, one upstream server, one
// AEP session with its log, questions and command intake. Make one with
// Host.NewSession (or New, for a session with a hub of its own) and run it
// with Run, once.
type Bridge struct {
	opts    Options
	log     *slog.Logger
	session string
	em      *bus.Emitter
	hub     *bus.Hub
	jsonl   *bus.Log
	mgr     *attention.Manager
	intake  *control.Intake
	red     *aep.Redactor

	// upstream describes the server process for /healthz.
	upstream atomic.Value // string

	// ran is set when Run starts on a host; the host's mutex guards it.
	ran bool
}

// New prepares a session: its id, log, emitter, hub, attention manager and
// control intake. Nothing is started until Run.
func New(o Options) (*Bridge, error) {
	if o.Agent == "" {
		o.Agent = "aep-mcp-bridge"
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.ServerStderr == nil {
		o.ServerStderr = os.Stderr
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 2 * time.Second
	}
	if o.KillTimeout <= 0 {
		o.KillTimeout = 5 * time.Second
	}
	if o.AttentionCapture == 0 {
		o.AttentionCapture = aep.CaptureRedacted
	}
	b := &Bridge{opts: o, log: o.Logger, session: o.host.sessionID(), hub: o.hub}
	if b.hub == nil {
		b.hub = bus.NewHub()
	}
	b.upstream.Store("starting")
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.log = b.log.With("session", b.session)
	sinks := []bus.Sink{}
	if o.LogDir != "" {
		l, err := bus.OpenLog(o.LogDir, o.Agent, b.session)
		if err != nil {
			return nil, err
		}
		b.jsonl = l
		sinks = append(sinks, l)
	}
	if o.sink != nil {
		sinks = append(sinks, o.sink)
	} else {
		sinks = append(sinks, b.hub)
	}
	sinks = append(sinks, o.Sinks...)
	var ext map[string]any
	if o.ClientIdentity != "" {
		ext = map[string]any{aep.ExtClient: o.ClientIdentity}
	}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: o.Agent, Session: b.session, Host: o.Host,
		Capture: o.Capture, AttentionCapture: o.AttentionCapture, Sinks: sinks, Logger: b.log, Extensions: ext})
	if err != nil {
		b.closeLog()
		return nil, err
	}
	b.em = em
	red := aep.NewRedactor(o.Redact)
	b.red = red
	mo := attention.ManagerOptions{Agent: o.Agent, Publisher: em, Timeout: o.Timeout,
		Ceiling: o.AttentionCapture, Redactor: red, Logger: b.log, PolicyOnly: o.AnswersOnly}
	if o.Answers != nil {
		mo.Policy = o.Answers
	}
	b.mgr = attention.NewManager(mo)
	b.intake = control.NewIntake(control.IntakeOptions{Emitter: em, Target: b.mgr, Logger: b.log})
	return b, nil
}

// Session returns the session id.
func (b *Bridge) Session() string { return b.session }

// Source returns the session's source URI.
func (b *Bridge) Source() string { return b.em.Source() }

// Hub returns the hub the session publishes to (its host's, when it runs
// on one).
func (b *Bridge) Hub() *bus.Hub { return b.hub }

// Intake returns the session's control intake.
func (b *Bridge) Intake() *control.Intake { return b.intake }

// Manager returns the session's attention manager.
func (b *Bridge) Manager() *attention.Manager { return b.mgr }

// LogPath returns the JSONL log's path, or "".
func (b *Bridge) LogPath() string {
	if b.jsonl == nil {
		return ""
	}
	return b.jsonl.Path()
}

// Upstream describes the upstream server's state: starting, running,
// failed to start, or exited with its status.
func (b *Bridge) Upstream() string { return b.upstream.Load().(string) }

// ErrUpstreamExited is wrapped by Run's error when the server went away.
var ErrUpstreamExited = errors.New("upstream MCP server exited")

// Run spawns the server and relays the session until the client leaves,
// the server exits, ctx is cancelled or the session's host closes. It
// returns nil for a client that left or a cancelled context, and an error
// wrapping ErrUpstreamExited when the server went away first. Whatever
// happens, the session's questions are settled, session.ended is written,
// the log is closed and the server is stopped before Run returns.
func (b *Bridge) Run(ctx context.Context) error {
	if h := b.opts.host; h != nil {
		if !h.started(b) {
			b.closeLog()
			return errors.New("the bridge is shutting down; the session was not started")
		}
		defer h.ended()
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(h.ctx, cancel)
		defer stop()
	}
	up, err := b.dial()
	if err != nil {
		b.abandon()
		return err
	}
	b.upstream.Store("running")
	var client elicit.Conn
	if b.opts.ClientConn != nil {
		client = messageConn{b.opts.ClientConn}
	} else {
		var clientClose func() error
		if c, ok := b.opts.Client.(io.Closer); ok {
			clientClose = c.Close
		}
		client = elicit.NewStreamConn(b.opts.Client, b.opts.ClientOut, clientClose, 0)
	}
	var once sync.Once
	startSession := func(ci elicit.ClientInfo) { once.Do(func() { b.emitStarted(ci) }) }
	var clientAs string
	if b.opts.ClientIdentity != "" {
		clientAs = "client:" + b.opts.ClientIdentity
	}
	eo := elicit.Options{Client: client, Server: up.conn, Manager: b.mgr, Publisher: b.em, Route: b.opts.Route,
		Keepalive: b.opts.Keepalive, Name: b.opts.Name, ClientName: clientAs, OnSession: startSession, Logger: b.log,
		Session: b.session, Redactor: b.red, OwnStates: b.opts.SharedClient}
	if b.opts.Policy != nil {
		// Policy rules' client: globs match the named client's
		// authenticated name; a client without one matches "".
		eo.Policy, eo.PolicyClient = b.opts.Policy, b.opts.ClientIdentity
	}
	px := elicit.New(eo)
	if s, ok := b.opts.Client.(waitSharer); ok && b.opts.ClientConn == nil {
		s.ShareWaits((&overlap{inflight: px.Inflight, since: overlapWaits}).busy)
	}
	began := time.Now()
	end := px.Run(ctx)
	return b.shutdown(end, px, up, began, startSession)
}

// waitSharer is a client stream that waits for input in Go's poller
// while busy reports true, and on its own thread otherwise.
type waitSharer interface {
	ShareWaits(busy func() bool)
}

// overlap tells the client's stream how to wait for the next message.
// While the client's requests overlap, the server's answers and the
// client's next requests come in the same moments, and one wait in Go's
// poller serves both streams. While the client waits for each answer
// before it asks again, its next request follows the answer, and its
// stream waits on its own thread, which wakes sooner and alone.
type overlap struct {
	inflight func() int // the client's requests awaiting the server
	// since counts the waits since more than one request was last
	// outstanding. Only the client's reader uses it.
	since int
}

// overlapWaits is how many waits after an overlap still count as
// overlapping: the requests of a burst that the server has all answered
// come again together.
const overlapWaits = 16

// busy says whether the client's requests overlap now or did within the
// last overlapWaits waits.
func (o *overlap) busy() bool {
	if o.inflight() > 1 {
		o.since = 0
		return true
	}
	if o.since < overlapWaits {
		o.since++
		return true
	}
	return false
}

// upstreamConn is the session's server side: a spawned process or a remote
// connection.
type upstreamConn struct {
	conn elicit.Conn
	proc *upstream.Process // nil for a remote server
}

// dial connects to the remote server or spawns the command.
func (b *Bridge) dial() (upstreamConn, error) {
	if b.opts.URL != "" {
		conn, err := upstream.Dial(upstream.Options{URL: b.opts.URL, Header: b.opts.Header, Transport: b.opts.Transport, ToolHeaders: b.opts.ToolHeaders, Logger: b.log})
		if err != nil {
			return upstreamConn{}, err
		}
		b.log.Info("remote upstream", "url", upstream.DisplayURL(b.opts.URL))
		if rw, ok := b.opts.ClientConn.(RelatedWriter); ok {
			return upstreamConn{conn: relatedConn{conn, rw}}, nil
		}
		return upstreamConn{conn: conn}, nil
	}
	p, err := upstream.Start(b.opts.Command, b.opts.Env, b.opts.ServerStderr)
	if err != nil {
		return upstreamConn{}, err
	}
	b.log.Info("upstream started", "pid", p.Pid())
	return upstreamConn{conn: elicit.NewStreamConn(p.Stdout(), p.Stdin(), p.Stdout().Close, 0), proc: p}, nil
}

// RelatedWriter is implemented by a ClientConn that sends each server
// message on the HTTP response stream of the client request it relates to
// (MCP basic/transports: messages a server sends on a request's stream
// relate to that request). The relation is known for a remote upstream,
// whose own response streams say it; a stdio upstream has none.
type RelatedWriter interface {
	// Related says that msg, which the proxy reads next from the server
	// and forwards unchanged unless it handles it, came on the response
	// stream of the client request whose JSON-RPC id is id. It is called
	// on the proxy's server-reading goroutine, before the proxy sees msg.
	Related(msg []byte, id json.RawMessage)
}

// emitStarted emits session.started with the client's name and version.
func (b *Bridge) emitStarted(ci elicit.ClientInfo) {
	data := map[string]any{}
	if ci.Name != "" {
		client := map[string]string{"name": ci.Name}
		if ci.Version != "" {
			client["version"] = ci.Version
		}
		data["client"] = client
	}
	if _, _, err := b.em.Emit(aep.Draft{Type: "session.started", Capture: aep.CaptureMetadata, Data: data}); err != nil {
		b.log.Warn("emitting session.started", "err", err)
	}
}

// shutdown settles the session in order: questions dismissed, in-flight
// requests failed when the server died, session.ended, the log closed, the
// server stopped, the streams closed.
func (b *Bridge) shutdown(end elicit.Ending, px *elicit.Proxy, up upstreamConn, began time.Time, startSession func(elicit.ClientInfo)) error {
	reason, runErr := "normal", error(nil)
	var failure string
	if !end.ClientClosed && end.Err == nil {
		status := "the remote session ended"
		failure = fmt.Sprintf("the remote MCP server at %s ended the session; check that it is running and reconnect", upstream.DisplayURL(b.opts.URL))
		if up.proc != nil {
			status = up.proc.ExitStatus(2 * time.Second)
			failure = fmt.Sprintf("upstream MCP server exited (%s); run the command alone to see its error", status)
		}
		reason, runErr = "error", fmt.Errorf("%w: %s", ErrUpstreamExited, status)
		b.upstream.Store("exited (" + status + ")")
		b.log.Error("upstream exited", "status", status)
	}
	// No command reaches the session from here on: it is no longer
	// routed, and the intake refuses what was already on its way.
	if b.opts.host != nil {
		b.opts.host.detach(b)
	}
	b.intake.Close()
	b.mgr.Close()
	if failure != "" {
		px.FailInflight(failure)
	}
	startSession(elicit.ClientInfo{})
	dur := time.Since(began).Milliseconds()
	if _, _, err := b.em.Emit(aep.Draft{Type: "session.ended", Capture: aep.CaptureMetadata,
		Data: map[string]any{"reason": reason, "duration_ms": dur}}); err != nil {
		b.log.Warn("emitting session.ended", "err", err)
	}
	b.closeLog()
	if b.opts.host == nil {
		b.hub.Close() // a hub of its own; a host's hub outlives the session
	}
	if up.proc != nil {
		up.proc.Stop(b.opts.StopGrace, b.opts.KillTimeout)
	}
	px.Close() // closes the server's stream, then the client's, and waits

	return runErr
}

// abandon releases what a session whose server never started holds: the
// host stops routing to it, its intake and manager are closed, the
// client's stream is closed (Run closes it whatever happens), then the
// log, and the session's own hub. No session.started was written, so no
// session.ended is either.
func (b *Bridge) abandon() {
	b.upstream.Store("failed to start")
	if b.opts.host != nil {
		b.opts.host.detach(b)
	}
	b.intake.Close()
	b.mgr.Close()
	var closeClient func() error
	if b.opts.ClientConn != nil {
		closeClient = b.opts.ClientConn.Close
	} else if c, ok := b.opts.Client.(io.Closer); ok {
		closeClient = c.Close
	}
	if closeClient != nil {
		if err := closeClient(); err != nil {
			b.log.Debug("closing the client's stream", "err", err)
		}
	}
	b.closeLog()
	if b.opts.host == nil {
		b.hub.Close()
	}
}

func (b *Bridge) closeLog() {
	if b.jsonl != nil {
		if err := b.jsonl.Close(); err != nil {
			b.log.Warn("closing the session log", "err", err)
		}
	}
}

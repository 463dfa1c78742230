package bridge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/notify"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
	"github.com/agenteventprotocol/aep-mcp-bridge/relay"
)

// HostOptions configure a Host. Zero values mean the documented defaults.
type HostOptions struct {
	// Listen is the AEP endpoint's address, e.g. 127.0.0.1:8787; "" means
	// no endpoint. When the port already serves an AEP endpoint that
	// accepts Token, the host joins it as an emitter instead (hub mode),
	// so one inbox shows every bridge's questions.
	Listen string
	// Listener, if set, is used for the endpoint instead of Listen.
	Listener net.Listener
	// Token is the bearer token of the endpoint and of every link.
	// Required with Listen, Listener or Relays.
	Token string
	// Relays are AEP relays to connect out to as an emitter (--relay).
	Relays []string
	// PlainRelay lets a link to a relay on plain ws:// off this machine
	// run once the relay proved the token (--relay-allow-plain); false
	// refuses it, since everything after the proof would travel in clear
	// (relay.LinkOptions.PlainRemote). The hub on the listen port is
	// always on loopback.
	PlainRelay bool
	// Agent is the AEP agent name; "" means "aep-mcp-bridge".
	Agent string
	// Instance names this process in hello frames and roster entries; ""
	// means "<hostname>/<pid>".
	Instance string
	// Root serves GET / of the endpoint (the operators' inbox); nil means
	// nothing is served there.
	Root http.Handler
	// AllowHosts and AllowOrigins widen the endpoint's Host and Origin
	// checks (--allow-host, --allow-origin; see endpoint.Options); nil
	// means none.
	AllowHosts, AllowOrigins []string
	// HeaderTimeout bounds reading a request's headers; 0 means 10s.
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, streams aside; 0 means
	// endpoint.DefaultBodyTimeout (60s).
	BodyTimeout time.Duration
	// IdleTimeout ends a keep-alive connection idle that long; 0 means
	// 120s. WebSocket and SSE streams are not idle connections.
	IdleTimeout time.Duration
	// Identities is the identity document of named operators
	// (identity/store.Path of the state folder); "" means none. The
	// endpoint follows the file while it runs: a revoked operator's
	// connections close within a second. A host that joins another
	// endpoint leaves operators to it. On the operator plane on NATS,
	// the plane's named operators are in force instead, the same on
	// every front door (WatchIdentities).
	Identities string
	// OperatorHeader and TrustedProxies take a proxy operator's name from
	// a header set by an authenticating reverse proxy (see
	// endpoint.Options; --operator-header, --trusted-proxy).
	OperatorHeader string
	TrustedProxies []netip.Prefix
	// Dial opens the connections of the hub join and the relay links; nil
	// means a net.Dialer.
	Dial relay.DialFunc
	// Notify, if set, notifies webhooks of the questions on the host's
	// hub (every question it serves: its own sessions', and those of the
	// bridges and emitters that joined it). Its Hub and Token are the
	// host's; an empty PublicURL links to the endpoint's own address. nil
	// means no notifications.
	Notify *notify.Options
	// NATS, if set, puts the operator plane on NATS JetStream
	// (--nats and the --nats-* flags): every bridge and gateway given the
	// same servers and prefix is a front door of the same open questions
	// and history, and commands reach a session's owner wherever it runs.
	// Its Token, Key, Agent and Instance are the host's; a nil Logger is
	// the host's. nil keeps the plane in this process (plane.Local).
	NATS *natsplane.Options
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// Defaults of HostOptions' timeouts.
const (
	defaultHeaderTimeout = 10 * time.Second
	defaultIdleTimeout   = 120 * time.Second
)

// Host owns a running bridge process: the event hub, the AEP endpoint and
// its HTTP server, the links to a hub or relays, and the bridged sessions.
// Close stops all of them in the shutdown order of STYLE.md: sessions end
// first (pending questions dismissed, session.ended written, logs flushed,
// servers stopped), then the endpoint stops accepting, then the links send
// what they queued and close.
//
// A Host is safe for concurrent use.
type Host struct {
	opts HostOptions
	log  *slog.Logger
	hub  *bus.Hub
	// plane is the host's part in the operator plane, whose hub is hub;
	// local is the plane when it is this process's alone.
	plane  plane.Member
	local  *plane.Local
	ep     *endpoint.Endpoint // nil without an endpoint (off, or joined)
	srv    *http.Server
	ln     net.Listener
	joined string // the hub this host joined, or ""
	links  []*relay.Link
	// key certifies the ids of the sessions of a host with links, so they
	// stay this process's on the hub or relay across its restarts.
	key    *proof.Key
	served chan struct{}    // closed when the HTTP server has stopped
	notify *notify.Notifier // nil without notifications
	// ids follows the identity document for the endpoint; nil without
	// one. idsDone closes when its goroutine, which Close stops after the
	// endpoint, has ended.
	ids       store.Source
	idsCancel context.CancelFunc
	idsDone   chan struct{}

	// ctx ends every session run on the host; linkCtx ends the links,
	// after the sessions, so what the sessions emit last (their
	// dismissals and session.ended) is sent first.
	ctx        context.Context
	cancel     context.CancelFunc
	linkCtx    context.Context
	linkCancel context.CancelFunc
	linkWG     sync.WaitGroup

	// mu guards sessions, running and closed.
	mu       sync.Mutex
	sessions map[string]*Bridge
	running  sync.WaitGroup
	closed   bool
}

// NewHost starts the AEP side of a bridge: the endpoint (or the join of an
// endpoint already on its port) and the relay links. Sessions are added
// with NewSession.
func NewHost(o HostOptions) (*Host, error) {
	if o.Agent == "" {
		o.Agent = "aep-mcp-bridge"
	}
	if o.Instance == "" {
		name, _ := os.Hostname()
		o.Instance = fmt.Sprintf("%s/%d", name, os.Getpid())
	}
	if o.Token == "" && (o.Listen != "" || o.Listener != nil || len(o.Relays) > 0) {
		return nil, errors.New("the AEP endpoint and relay links need a bearer token: set AEP_TOKEN or pass --token")
	}
	h := &Host{opts: o, log: o.Logger, sessions: map[string]*Bridge{}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.linkCtx, h.linkCancel = context.WithCancel(context.Background())
	if err := h.joinPlane(); err != nil {
		h.cancel()
		h.linkCancel()
		return nil, err
	}
	fail := func(err error) (*Host, error) {
		h.cancel()
		h.linkCancel()
		if h.ln != nil {
			h.ln.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.leavePlane(ctx)
		return nil, err
	}
	if err := h.listen(); err != nil {
		return fail(err)
	}
	if err := h.newLinks(); err != nil {
		return fail(err)
	}
	if o.Notify != nil {
		if err := h.startNotify(*o.Notify); err != nil {
			return fail(err)
		}
	}
	if h.ln != nil {
		if err := h.serve(); err != nil {
			if h.notify != nil {
				h.notify.Close(context.Background())
			}
			return fail(err)
		}
	}
	for _, l := range h.links {
		h.linkWG.Add(1)
		go h.runLink(l)
	}
	return h, nil
}

// startNotify starts the notifier on the host's hub. Without a public
// URL, links point at the inbox this process serves, or the one of the
// hub it joined.
func (h *Host) startNotify(o notify.Options) error {
	o.Hub, o.Token = h.hub, h.opts.Token
	if o.Claim == nil {
		o.Claim = h.notifyClaim()
	}
	if o.Logger == nil {
		o.Logger = h.log
	}
	if o.PublicURL == "" {
		addr := h.opts.Listen
		if h.ln != nil {
			addr = h.ln.Addr().String()
		}
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				host = "localhost"
			}
			o.PublicURL = "http://" + net.JoinHostPort(host, port)
		}
	}
	n, err := notify.New(o)
	if err != nil {
		return err
	}
	h.notify = n
	return nil
}

// newLinks creates the link to the joined hub, which must prove the token,
// and to each relay. A relay that answers now, offers no token proof and
// could get the token only in clear off this machine is refused here, so
// the bridge does not start in that state.
func (h *Host) newLinks() error {
	type target struct {
		url                       string
		requireProof, plainRemote bool
	}
	var targets []target
	if h.joined != "" {
		targets = append(targets, target{url: h.joined, requireProof: true})
	}
	for _, u := range h.opts.Relays {
		targets = append(targets, target{url: u, plainRemote: h.opts.PlainRelay})
	}
	if len(targets) > 0 && h.key == nil {
		key, err := proof.NewKey(rand.Reader)
		if err != nil {
			return err
		}
		h.key = key
	}
	for _, tg := range targets {
		l, err := relay.NewLink(relay.LinkOptions{URL: tg.url, Token: h.opts.Token, Key: h.key, RequireProof: tg.requireProof,
			PlainRemote: tg.plainRemote, Dial: h.opts.Dial, Agent: h.opts.Agent, Instance: h.opts.Instance, Accepts: control.Accepts, Logger: h.log})
		if err != nil {
			return fmt.Errorf("--relay: %w", err)
		}
		if !tg.requireProof {
			ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
			err = l.Check(ctx)
			cancel()
			if err != nil {
				return fmt.Errorf("--relay %s: %w", tg.url, err)
			}
		}
		l.Bind(hostTarget{h})
		h.links = append(h.links, l)
	}
	return nil
}

// listen opens the endpoint's port, or finds the AEP endpoint already
// serving it and records it as the hub to join.
func (h *Host) listen() error {
	switch {
	case h.opts.Listener != nil:
		h.ln = h.opts.Listener
		return nil
	case h.opts.Listen == "":
		return nil
	}
	addr := h.opts.Listen
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		h.ln = ln
		return nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listening on %s for the AEP endpoint: %w; pass --listen with another address, or --listen off", addr, err)
	}
	if h.fleet() {
		// Every front door of the plane serves this process's sessions:
		// there is nothing to join.
		h.log.Info("the AEP endpoint's port is taken; this bridge serves no endpoint, and its sessions are on every front door of the operator plane", "listen", addr)
		return nil
	}
	// The port's holder must prove it knows the token before this bridge
	// joins it; the token itself never goes to it.
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	if err := relay.JoinHub(ctx, addr, h.opts.Token, h.opts.Dial); err != nil {
		return fmt.Errorf("the AEP endpoint port is taken: %w; nothing was sent to it; pass --listen with a free address, or --listen off", err)
	}
	h.joined = relay.HubURL(addr)
	h.log.Info("an AEP endpoint already serves this port; joining it as an emitter", "endpoint", h.joined)
	return nil
}

// serve starts the endpoint on the listener, with the named operators of
// the identity document, if any.
func (h *Host) serve() error {
	eo := endpoint.Options{Token: h.opts.Token, Hub: h.hub, Agent: h.opts.Agent, Logger: h.log,
		Root: h.opts.Root, Health: h.health, AllowHosts: h.opts.AllowHosts, AllowOrigins: h.opts.AllowOrigins,
		BodyTimeout: h.opts.BodyTimeout, OperatorHeader: h.opts.OperatorHeader, TrustedProxies: h.opts.TrustedProxies}
	if h.opts.Identities != "" || h.fleet() {
		ids, err := h.WatchIdentities(store.Options{Path: h.opts.Identities,
			OnLoad: func(d *identity.Directory) {
				// In force first, then said: a reader of the log may act
				// on the line at once.
				h.ep.SetOperators(d)
				h.log.Info("named operators reloaded", "file", h.opts.Identities, "operators", len(d.Document().Operators))
			},
			OnError: func(err error) { h.log.Error("named operators", "err", err) }})
		if err != nil {
			return err
		}
		h.ids = ids
		eo.Operators = ids.Directory()
		eo.OnOperator = func(name string, at time.Time) { ids.Used(store.OperatorKey(name), at) }
	}
	if h.fleet() {
		eo.Plane = h.plane
	}
	ep, err := endpoint.New(eo)
	if err != nil {
		return err
	}
	h.ep = ep
	if h.ids != nil {
		var ctx context.Context
		ctx, h.idsCancel = context.WithCancel(context.Background())
		h.idsDone = make(chan struct{})
		go h.watchIdentities(ctx)
	}
	header, idle := h.opts.HeaderTimeout, h.opts.IdleTimeout
	if header <= 0 {
		header = defaultHeaderTimeout
	}
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	body := h.opts.BodyTimeout
	if body <= 0 {
		body = endpoint.DefaultBodyTimeout
	}
	// ReadTimeout is the backstop of a request's headers and body
	// together; the endpoint narrows it to the body's deadline, and lifts
	// it only for an authenticated stream (its own deadlines take over).
	h.srv = &http.Server{Handler: ep.Handler(), ReadHeaderTimeout: header, ReadTimeout: header + body, IdleTimeout: idle}
	h.served = make(chan struct{})
	go h.serveHTTP()
	return nil
}

// watchIdentities is the identity document's watcher goroutine; Close
// stops it after the endpoint.
func (h *Host) watchIdentities(ctx context.Context) {
	defer close(h.idsDone)
	h.ids.Run(ctx)
}

// serveHTTP is the HTTP server's goroutine; Close stops it.
func (h *Host) serveHTTP() {
	defer close(h.served)
	if err := h.srv.Serve(h.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		h.log.Error("the AEP endpoint stopped serving", "err", err)
	}
}

// runLink is one link's goroutine; Close stops it after the sessions ended,
// so session.ended is sent first.
func (h *Host) runLink(l *relay.Link) {
	defer h.linkWG.Done()
	l.Run(h.linkCtx)
}

// sessionID names a new session: certified to the host's key when it has
// links (proof.Key.SessionID), a plain id otherwise.
func (h *Host) sessionID() string {
	if h == nil || h.key == nil {
		return aep.NewID()
	}
	return h.key.SessionID(aep.NewID())
}

// Notifier returns the host's notifier, or nil.
func (h *Host) Notifier() *notify.Notifier { return h.notify }

// Hub returns the hub every session of the host publishes to.
func (h *Host) Hub() *bus.Hub { return h.hub }

// Addr returns the endpoint's address, or "" when the host serves none.
func (h *Host) Addr() string {
	if h.ep == nil {
		return ""
	}
	return h.ln.Addr().String()
}

// Joined returns the socket URL of the hub this host joined because its
// port was taken, or "".
func (h *Host) Joined() string { return h.joined }

// NewSession prepares a bridged session on the host: its events reach the
// host's hub and links, and commands for it are routed to its intake. Run
// it with Run; Close ends it if it is still running.
func (h *Host) NewSession(o Options) (*Bridge, error) {
	if o.Agent == "" {
		o.Agent = h.opts.Agent
	}
	for _, l := range h.links {
		o.Sinks = append(o.Sinks, l)
	}
	o.hub, o.sink, o.host = h.hub, h.plane.Sink(), h
	b, err := New(o)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		b.closeLog()
		return nil, errors.New("the bridge is shutting down; no new sessions are accepted")
	}
	if err := h.plane.Claim(b.binding(h.opts.Instance), planeTarget{b.intake}); err != nil {
		b.closeLog()
		return nil, err
	}
	h.sessions[b.session] = b
	if h.ep != nil {
		h.ep.AddClaim(b.Claim(h.opts.Instance))
	}
	return b, nil
}

// started registers a session's Run, so Close waits for it; it reports
// false when the host is closing.
func (h *Host) started(b *Bridge) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	b.ran = true
	h.running.Add(1)
	return true
}

// detach stops routing commands to a session that is ending: it runs
// before the session writes session.ended, so no command reaches it after.
func (h *Host) detach(b *Bridge) {
	h.mu.Lock()
	delete(h.sessions, b.session)
	h.mu.Unlock()
	if h.ep != nil {
		h.ep.RemoveClaim(b.session)
	}
	h.plane.Release(b.session)
}

// ended marks a session's Run as returned.
func (h *Host) ended() { h.running.Done() }

// session returns a live session by id.
func (h *Host) session(id string) *Bridge {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// Close ends the sessions still running (and closes those never run),
// then stops the endpoint, then the links, after they sent what the
// sessions emitted last. ctx bounds each wait; what it cuts short is
// reported in the error, and everything is stopped regardless.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	var idle []*Bridge
	for _, b := range h.sessions {
		if !b.ran {
			idle = append(idle, b)
		}
	}
	h.mu.Unlock()
	for _, b := range idle {
		h.detach(b)
		b.closeLog()
	}
	h.cancel() // ends every session's Run
	var errs []error
	if err := waitFor(ctx, &h.running); err != nil {
		errs = append(errs, fmt.Errorf("sessions still ending: %w", err))
	}
	if h.srv != nil {
		h.ep.Close()
		if err := h.srv.Shutdown(ctx); err != nil {
			h.srv.Close()
			errs = append(errs, fmt.Errorf("stopping the AEP endpoint: %w", err))
		}
		<-h.served
		if err := h.ep.Wait(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if h.ids != nil {
		h.idsCancel() // the last uses are written as it ends
		<-h.idsDone
	}
	h.linkCancel() // the links send what is queued, then a closing frame
	if err := waitFor(ctx, &h.linkWG); err != nil {
		errs = append(errs, fmt.Errorf("relay links still flushing: %w", err))
	}
	if h.notify != nil { // after the sessions' last events, which it sends too
		if err := h.notify.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := h.leavePlane(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// closeWhenDone closes done once wg is done. It ends with the last
// goroutine wg counts, even when waitFor stopped waiting.
func closeWhenDone(wg *sync.WaitGroup, done chan struct{}) {
	wg.Wait()
	close(done)
}

// waitFor waits for wg, or for ctx to end first.
func waitFor(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go closeWhenDone(wg, done)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// health is the endpoint's /healthz: the links' state and each session's
// upstream.
func (h *Host) health() map[string]any {
	relayState := "off"
	if len(h.links) > 0 {
		relayState = "connected"
		for _, l := range h.links {
			if !l.Connected() {
				relayState = "connecting"
			}
		}
	}
	out := map[string]any{"relay": relayState}
	if h.notify != nil {
		out["notify"] = h.notify.Health()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch len(h.sessions) {
	case 0:
		out["upstream"] = "none"
	case 1:
		for _, b := range h.sessions {
			out["upstream"] = b.Upstream()
		}
	default:
		ups := map[string]string{}
		for id, b := range h.sessions {
			ups[id] = b.Upstream()
		}
		out["upstream"] = ups
	}
	return out
}

// hostTarget routes a command arriving on a link to the session it
// addresses.
type hostTarget struct{ h *Host }

func (t hostTarget) Submit(cmd aep.Event, from control.Sender) (string, string) {
	b := t.h.session(cmd.Session)
	if b == nil {
		return "no-route", fmt.Sprintf("no session %q in this bridge", cmd.Session)
	}
	return intakeTarget{b.intake}.Submit(cmd, from)
}

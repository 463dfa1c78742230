package endpoint

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/hostguard"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Options configure an Endpoint.
type Options struct {
	// Token is the bearer token every surface but /healthz requires.
	// Required: control is privileged, localhost included.
	Token string
	// Hub is the event hub the endpoint serves. Required.
	Hub *bus.Hub
	// Plane, if set, is the operator plane Hub belongs to (its member's
	// Hub): a command for a session that no session of this process nor
	// any of its connections claims goes through it to the process that
	// owns the session, and the roster lists the plane's sessions too.
	// nil routes commands in this process only.
	Plane plane.Member
	// Agent names the endpoint in its hello; "" means "aep-mcp-bridge".
	Agent string
	// MaxEvent bounds one event: a POSTed event, one NDJSON line, one
	// WebSocket frame. 0 means DefaultMaxEvent.
	MaxEvent int64
	// MaxBody bounds a POSTed body (an NDJSON batch); 0 means
	// DefaultMaxBody. MaxEvent is lowered to it when above.
	MaxBody int64
	// Health reports extra /healthz members (relay, upstream); nil means
	// none.
	Health func() map[string]any
	// Logger receives logs; nil discards them. Tokens and event content
	// are never logged.
	Logger *slog.Logger
	// Root, if set, serves GET / without the token: the operators' inbox
	// page, which carries no data and reads the token from the URL
	// fragment (fragments never reach the server).
	Root http.Handler
	// AllowHosts are Host values served besides the address a request
	// arrived on, localhost and loopback IPs (each with that port): "name"
	// matches the name on any port, "name:port" that port only. Nil means
	// none (--allow-host).
	AllowHosts []string
	// AllowOrigins are browser origins (scheme://host[:port]) allowed
	// besides the endpoint's own; they get CORS headers. Nil means none
	// (--allow-origin).
	AllowOrigins []string
	// BodyTimeout bounds reading a request's body, streams aside; 0 means
	// DefaultBodyTimeout (60s).
	BodyTimeout time.Duration
	// Operators are the named operators (package identity) whose
	// credentials, and whose names from a trusted proxy, open the
	// endpoint besides the token; nil means none. SetOperators replaces
	// them while the endpoint runs.
	Operators *identity.Directory
	// OperatorHeader names the request header an authenticating reverse
	// proxy puts the operator's name in (--operator-header); it is read
	// only on requests whose TCP peer is in TrustedProxies
	// (--trusted-proxy). "" reads no header.
	OperatorHeader string
	TrustedProxies []netip.Prefix
	// OnOperator is told each time an operator authenticates, for its
	// last use; nil means nothing is told. It must not block.
	OnOperator func(name string, at time.Time)

	// Test knobs: the connection queue (0 means socketQueue), the
	// liveness timers (0 means pingEvery and pongWait), the handshake
	// deadline (0 means handshakeWait), the grace of a peer proving the
	// token (0 means proveGrace), the clock of the proving slots, of
	// operators' expiry and of the flood control (nil means time.Now), a
	// hook run after a departed connection's sources are released, and
	// the TCP peer of a request (nil means its RemoteAddr).
	queue               int
	pingEvery, pongWait time.Duration
	handshakeWait       time.Duration
	proveGrace          time.Duration
	now                 func() time.Time
	afterRelease        func()
	peer                func(*http.Request) netip.Addr
}

// Default size bounds of what peers send. DefaultMaxEvent is the bound a
// session's emitter keeps to (bus.DefaultMaxEvent), so the bridge never
// emits an event its own hub would refuse.
const (
	DefaultMaxEvent = bus.DefaultMaxEvent
	DefaultMaxBody  = 4 << 20
)

// Endpoint serves the AEP bindings over HTTP: discovery, the WebSocket
// duplex binding, SSE, ingest, and /healthz (AEP-0003 §3).
//
// An Endpoint is safe for concurrent use; Close ends every connection.
type Endpoint struct {
	opts   Options
	log    *slog.Logger
	policy *hostguard.Policy

	// base ends with Close: streams select on it. active counts the
	// connections and streams being served, for Wait; it is added to
	// only under mu while the endpoint is open.
	base   context.Context
	stop   context.CancelFunc
	active sync.WaitGroup

	// access decides who may write what and who takes which commands
	// (package authority); it has its own lock.
	access *table
	// relays is what the endpoint stated on the operator plane of its
	// emitter connections (plane.go).
	relays relays

	// operators are the named operators in force (SetOperators), and
	// opsState what the endpoint tracks of them, under its own lock.
	operators atomic.Pointer[identity.Directory]
	opsState
	// stopped is set by Close, for the expiry timer.
	stopped atomic.Bool

	// mu guards the fields below.
	mu     sync.Mutex
	conns  map[*socket]struct{}
	closed bool
	// provers are the requests at /join not yet through the proof
	// (provers.go); evictions counts the slots taken from them, and
	// joinFailures the failed proofs since one was last logged, at
	// joinLogged.
	provers      map[*prover]struct{}
	evictions    int
	joinFailures int
	joinLogged   time.Time
}

// New returns an endpoint.
func New(o Options) (*Endpoint, error) {
	if o.Token == "" {
		return nil, errors.New("the AEP endpoint needs a bearer token: set AEP_TOKEN or pass --token")
	}
	if o.Hub == nil {
		return nil, errors.New("the AEP endpoint needs a hub")
	}
	if o.MaxEvent <= 0 {
		o.MaxEvent = DefaultMaxEvent
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	o.MaxEvent = min(o.MaxEvent, o.MaxBody)
	if o.queue <= 0 {
		o.queue = socketQueue
	}
	if o.pingEvery <= 0 {
		o.pingEvery = pingEvery
	}
	if o.pongWait <= 0 {
		o.pongWait = pongWait
	}
	if o.handshakeWait <= 0 {
		o.handshakeWait = handshakeWait
	}
	if o.proveGrace <= 0 {
		o.proveGrace = proveGrace
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.Agent == "" {
		o.Agent = "aep-mcp-bridge"
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.peer == nil {
		o.peer = peerOf
	}
	if o.OperatorHeader != "" && len(o.TrustedProxies) == 0 {
		return nil, errors.New("--operator-header needs --trusted-proxy: the addresses of the authenticating proxies whose header is believed")
	}
	if o.OperatorHeader != "" && http.CanonicalHeaderKey(o.OperatorHeader) == "Authorization" {
		return nil, errors.New("--operator-header cannot be Authorization, which carries credentials; name the header your proxy sets, such as X-Forwarded-User")
	}
	policy, err := hostguard.New(o.AllowHosts, o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{opts: o, log: o.Logger, policy: policy, access: authority.NewTable[Claim, *socket](o.Hub),
		conns: map[*socket]struct{}{}, provers: map[*prover]struct{}{}}
	e.live, e.refusedLogged = map[*liveOperator]struct{}{}, map[string]time.Time{}
	e.operators.Store(o.Operators)
	if o.Operators == nil {
		e.operators.Store(identity.NewDirectory(nil))
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.base, e.stop = context.WithCancel(context.Background())
	return e, nil
}

// Handler returns the HTTP handler of every binding. Every request passes
// the Host and Origin guard first; every surface but /healthz, the inbox
// page, discovery without credentials and the token proof at /join needs
// the bearer token.
func (e *Endpoint) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", e.healthz)
	if e.opts.Root != nil {
		mux.Handle("GET /{$}", e.opts.Root)
	}
	mux.HandleFunc("GET /events", e.discovery)
	mux.HandleFunc("GET /.well-known/aep", e.discovery)
	mux.Handle("POST /events", e.auth(http.HandlerFunc(e.ingest)))
	mux.Handle("GET /socket", e.auth(http.HandlerFunc(e.serveSocket)))
	mux.Handle("GET /stream", e.auth(http.HandlerFunc(e.serveStream)))
	mux.HandleFunc("GET "+proof.Path, e.serveJoin)
	return e.guard(mux)
}

// bearer returns the credential a request presents: the Authorization
// header's bearer token or, for browsers, ?access_token= (AEP-0003 §8.1).
func bearer(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			return strings.TrimSpace(h[7:]), true
		}
		return "", true
	}
	if t := r.URL.Query().Get("access_token"); t != "" {
		return t, true
	}
	return "", false
}

// tokenOK compares a presented token with the endpoint's in constant time.
func (e *Endpoint) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(e.opts.Token)) == 1
}

// auth requires a credential (operators.go: the token, an operator's
// credential, or a trusted proxy's name), and hands next the principal it
// authenticates (principalOf) and the operator record behind it
// (operatorOf). Credentials are never logged.
func (e *Endpoint) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, o, fail := e.authenticate(r)
		if fail != nil {
			e.refused(r, fail)
			unauthorized(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(withOperator(r.Context(), p, o)))
	})
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="aep"`)
	writeError(w, http.StatusUnauthorized, "unauthorized",
		"this endpoint needs the bridge's bearer token or an operator's credential: send Authorization: Bearer <credential> (or ?access_token= from a browser); "+
			"the bridge prints where its token is stored when it starts, and operators add prints an operator's credential once")
}

// httpError is the body of every refusal on the HTTP surfaces.
type httpError struct {
	Error  string `json:"error"`
	Detail string `json:"detail,omitempty"`
	Line   *int   `json:"line,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, detail string) {
	writeJSON(w, status, httpError{Error: code, Detail: detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (e *Endpoint) healthz(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"ok": true}
	if e.opts.Health != nil {
		for k, v := range e.opts.Health() {
			out[k] = v
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// capabilities is the capability set of hello and discovery (AEP-0003 §4).
func (e *Endpoint) capabilities() *aep.Capabilities {
	return &aep.Capabilities{
		Filters:      []string{"attr-match"},
		Replay:       &aep.ReplayCaps{Buffer: e.opts.Hub.ReplayDepth(), All: true},
		Capture:      []string{"none", "metadata", "redacted", "full"},
		Control:      aep.NewControlCaps(e.accepts()).Raw(),
		Roster:       json.RawMessage("{}"),
		Experimental: experimental(),
	}
}

// experimental advertises what this endpoint adds to AEP 0.1 (AEP-0003 §4
// rule 6): every subscription starts with the open questions it matches,
// counted in the subscribed frame (see subscribe).
func experimental() json.RawMessage {
	members := map[string]json.RawMessage{"open-questions": json.RawMessage(`{"snapshot":true}`)}
	var proofs map[string]json.RawMessage
	if json.Unmarshal(proof.Advertisement(), &proofs) == nil {
		for k, v := range proofs {
			members[k] = v
		}
	}
	b, _ := json.Marshal(members) // raw members of valid JSON always encode
	return b
}

// discoveryDoc is the discovery document (AEP-0003 §3.4).
type discoveryDoc struct {
	AEP          []string          `json:"aep"`
	Role         string            `json:"role"`
	Endpoints    map[string]string `json:"endpoints"`
	Capabilities *aep.Capabilities `json:"capabilities"`
}

// discovery serves the discovery document. Without credentials it is the
// public part only (aep, role, endpoints and the token-proof capability),
// so a bridge can learn that this endpoint proves the token without sending
// it; with the token it is whole; with a wrong token it is refused.
func (e *Endpoint) discovery(w http.ResponseWriter, r *http.Request) {
	doc := discoveryDoc{
		AEP:          []string{aep.Version},
		Role:         "collector",
		Endpoints:    map[string]string{"events": "/events", "stream": "/stream", "socket": "/socket"},
		Capabilities: &aep.Capabilities{Experimental: proof.Advertisement()},
	}
	_, presented := bearer(r)
	if h := e.opts.OperatorHeader; h != "" && r.Header.Get(h) != "" && trusted(e.opts.TrustedProxies, e.opts.peer(r)) {
		presented = true
	}
	if presented {
		if _, _, fail := e.authenticate(r); fail != nil {
			e.refused(r, fail)
			unauthorized(w)
			return
		}
		doc.Capabilities = e.capabilities()
	}
	writeJSON(w, http.StatusOK, doc)
}

// Connections returns the number of open WebSocket connections.
func (e *Endpoint) Connections() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

// Close ends every WebSocket connection with a closing frame and every SSE
// stream, and refuses new ones; Wait waits until they are gone. Other HTTP
// requests in flight end with the server that serves Handler.
func (e *Endpoint) Close() {
	e.stopped.Store(true)
	e.stopExpiry()
	e.mu.Lock()
	e.closed = true
	e.stop()
	conns := make([]*socket, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c)
	}
	for p := range e.provers {
		if p.conn != nil {
			p.conn.Close() // a proof in progress ends; serveJoin cleans up
		}
	}
	e.mu.Unlock()
	for _, c := range conns {
		c.shutdown("the endpoint is shutting down")
	}
}

// Wait waits until every connection and stream Close ended is gone, or
// ctx ends first.
func (e *Endpoint) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go closeWhenDone(&e.active, done)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the endpoint's connections to close: %w", ctx.Err())
	}
}

// closeWhenDone closes done once wg is done: a waiter that a select can
// bound. It ends with the last goroutine wg counts.
func closeWhenDone(wg *sync.WaitGroup, done chan struct{}) {
	wg.Wait()
	close(done)
}

// enter counts a connection or stream as served; it reports false once the
// endpoint is closed. Each true must be matched by e.active.Done().
func (e *Endpoint) enter() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.active.Add(1)
	return true
}

// downlevel applies a subscription's capture ceiling to a delivery.
func downlevel(d *bus.Delivery, ceiling aep.Capture) ([]byte, error) {
	if ceiling == 0 || d.Event.EffectiveCapture() <= ceiling {
		return d.Raw, nil
	}
	ev, err := aep.Downlevel(d.Event, ceiling)
	if err != nil {
		return nil, err
	}
	return json.Marshal(ev)
}

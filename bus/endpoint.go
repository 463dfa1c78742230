package bus

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Target is a session that accepts commands: the bridge wires each local
// session's control intake to the endpoint through it.
type Target interface {
	// Submit hands cmd to the session. It returns "" when the session made
	// its ack decision (the ack reaches subscribers as an event), or a
	// connection-scoped refusal code and detail (AEP-0004 §4.2).
	Submit(cmd aep.Event, authenticated bool) (code, detail string)
}

// Claim describes a live session an endpoint terminates, for roster
// frames (AEP-0003 §4.1).
type Claim struct {
	Session  string
	Agent    string
	Instance string
	Accepts  []string
	// Control is the claimant's declared control block, relayed verbatim
	// in roster entries; nil means {accepts, ack_window_ms} from Accepts.
	Control json.RawMessage
	// Emits is the claimant's declared category list, if any.
	Emits  []string
	Target Target

	owner *socket // the emitter connection behind a remote claim
}

// RawTarget is a Target that takes a command's exact bytes: a relay
// forwards a command byte-identically (AEP-0004 §4.4).
type RawTarget interface {
	SubmitRaw(raw []byte) (code, detail string)
}

// EndpointOptions configure an Endpoint.
type EndpointOptions struct {
	// Token is the bearer token every surface but /healthz requires.
	// Required: control is privileged, localhost included.
	Token string
	// Hub is the event hub the endpoint serves. Required.
	Hub *Hub
	// Agent names the endpoint in its hello.
	Agent string
	// MaxBody bounds a POSTed body and a WebSocket frame; 0 means 1 MiB.
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
}

// Endpoint serves the AEP bindings over HTTP: discovery, the WebSocket
// duplex binding, SSE, ingest, and /healthz (AEP-0003 §3).
//
// An Endpoint is safe for concurrent use; Close ends every connection.
type Endpoint struct {
	opts EndpointOptions
	log  *slog.Logger

	// mu guards claims and conns.
	mu     sync.Mutex
	claims []Claim
	conns  map[*socket]struct{}
	closed bool
}

// NewEndpoint returns an endpoint.
func NewEndpoint(o EndpointOptions) (*Endpoint, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("the AEP endpoint needs a bearer token: set AEP_TOKEN or pass --token")
	}
	if o.Hub == nil {
		return nil, fmt.Errorf("the AEP endpoint needs a hub")
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.Agent == "" {
		o.Agent = "aep-mcp-bridge"
	}
	e := &Endpoint{opts: o, log: o.Logger, conns: map[*socket]struct{}{}}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	return e, nil
}

// AddClaim registers a live session that accepts commands.
func (e *Endpoint) AddClaim(c Claim) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.claims = append(e.claims, c)
}

// claimFor registers a remote emitter's claim on a session once.
func (e *Endpoint) claimFor(s *socket, session string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.claims {
		if c.owner == s && c.Session == session {
			return
		}
	}
	s.mu.Lock()
	c := Claim{Session: session, Agent: s.agent, Instance: s.instance, Accepts: s.accepts, Control: s.control,
		Emits: s.emits, Target: socketTarget{s}, owner: s}
	s.mu.Unlock()
	e.claims = append(e.claims, c)
}

// dropClaims forgets every claim of a connection that went away.
func (e *Endpoint) dropClaims(s *socket) {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.claims[:0]
	for _, c := range e.claims {
		if c.owner != s {
			kept = append(kept, c)
		}
	}
	e.claims = kept
}

// RemoveClaim forgets a session's claim.
func (e *Endpoint) RemoveClaim(session string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.claims[:0]
	for _, c := range e.claims {
		if c.Session != session {
			kept = append(kept, c)
		}
	}
	e.claims = kept
}

// route finds the one claim of a session (AEP-0004 §4.5).
func (e *Endpoint) route(session string) (Claim, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var found []Claim
	for _, c := range e.claims {
		if c.Session == session {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return Claim{}, "no-route"
	case 1:
		return found[0], ""
	}
	return Claim{}, "ambiguous"
}

func (e *Endpoint) accepts() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, c := range e.claims {
		for _, a := range c.Accepts {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// Handler returns the HTTP handler of every binding.
func (e *Endpoint) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", e.healthz)
	if e.opts.Root != nil {
		mux.Handle("GET /{$}", e.opts.Root)
	}
	mux.Handle("GET /events", e.auth(http.HandlerFunc(e.discovery)))
	mux.Handle("GET /.well-known/aep", e.auth(http.HandlerFunc(e.discovery)))
	mux.Handle("POST /events", e.auth(http.HandlerFunc(e.ingest)))
	mux.Handle("GET /socket", e.auth(http.HandlerFunc(e.serveSocket)))
	mux.Handle("GET /stream", e.auth(http.HandlerFunc(e.serveStream)))
	return mux
}

// auth requires the bearer token, from the Authorization header or, for
// browsers, ?access_token= (AEP-0003 §8.1). Tokens are compared in
// constant time and never logged.
func (e *Endpoint) auth(next http.Handler) http.Handler {
	want := []byte(e.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := ""
		if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			got = strings.TrimSpace(h[7:])
		} else if t := r.URL.Query().Get("access_token"); t != "" {
			got = t
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aep"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized",
				"detail": "this endpoint needs the bridge's bearer token: send Authorization: Bearer <token> (or ?access_token= from a browser); the bridge prints where its token is stored when it starts"})
			return
		}
		next.ServeHTTP(w, r)
	})
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
func (e *Endpoint) capabilities() map[string]any {
	return map[string]any{
		"filters":      []string{"attr-match"},
		"replay":       map[string]any{"buffer": e.opts.Hub.ReplayDepth(), "all": true},
		"capture":      []string{"none", "metadata", "redacted", "full"},
		"control":      map[string]any{"accepts": e.accepts(), "ack_window_ms": 10000},
		"roster":       map[string]any{},
		"experimental": map[string]any{},
	}
}

func (e *Endpoint) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"aep":          []string{aep.Version},
		"role":         "collector",
		"endpoints":    map[string]string{"events": "/events", "stream": "/stream", "socket": "/socket"},
		"capabilities": e.capabilities(),
	})
}

// ingest is POST /events (AEP-0003 §3.2): one event, or NDJSON.
func (e *Endpoint) ingest(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get("AEP-Version"); v != aep.Version {
		writeJSON(w, http.StatusUpgradeRequired, map[string]any{"versions": []string{aep.Version},
			"detail": "send the header AEP-Version: 0.1"})
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/json" && mt != "application/x-ndjson" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "unsupported-media-type",
			"detail": "POST application/json (one event) or application/x-ndjson (one event per line)"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, e.opts.MaxBody+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid-event", "detail": "reading the body: " + err.Error()})
		return
	}
	if int64(len(body)) > e.opts.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "too-large",
			"detail": fmt.Sprintf("the body exceeds %d bytes; send smaller batches", e.opts.MaxBody)})
		return
	}
	var lines [][]byte
	if mt == "application/json" {
		lines = [][]byte{body}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 64<<10), int(e.opts.MaxBody)+1)
		for sc.Scan() {
			if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
				lines = append(lines, append([]byte(nil), l...))
			}
		}
	}
	evs := make([]*aep.Event, 0, len(lines))
	for i, l := range lines {
		ev, err := aep.Parse(l)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid-event", "line": i, "detail": err.Error()})
			return
		}
		evs = append(evs, ev)
	}
	for i, ev := range evs {
		if aep.IsCommand(ev.Type) {
			// Control flows only on the duplex binding (AEP-0004 §4.1).
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid-event", "line": i,
				"detail": "commands are accepted only on the WebSocket binding /socket"})
			return
		}
	}
	for i, ev := range evs {
		e.opts.Hub.Write(*ev, lines[i])
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"accepted": len(evs)})
}

// Connections returns the number of open WebSocket connections.
func (e *Endpoint) Connections() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

// Close ends every WebSocket connection with a closing frame.
func (e *Endpoint) Close() {
	e.mu.Lock()
	e.closed = true
	conns := make([]*socket, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	for _, c := range conns {
		c.shutdown("the endpoint is shutting down")
	}
}

// downlevel applies a subscription's capture ceiling to a delivery.
func downlevel(d *Delivery, ceiling aep.Capture) ([]byte, error) {
	if ceiling == 0 || d.Event.EffectiveCapture() <= ceiling {
		return d.Raw, nil
	}
	ev, err := aep.Downlevel(d.Event, ceiling)
	if err != nil {
		return nil, err
	}
	return json.Marshal(ev)
}

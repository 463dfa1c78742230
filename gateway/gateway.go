package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/hostguard"
	"github.com/agenteventprotocol/aep-mcp-bridge/upstream"
)

// Options configure a gateway. Zero values mean the documented defaults.
type Options struct {
	// Host runs every session's bridge: one hub, one AEP endpoint or
	// link, one inbox for all. Required.
	Host *bridge.Host
	// Session is the template of each session's bridge options: the
	// upstream (Command, or URL with Header and Transport), timeouts,
	// route, capture, log folder, answers. ClientConn is set per session.
	// Command or URL is required.
	Session bridge.Options
	// FleetSecret is the secret every gateway of a fleet shares: the AEP
	// token. The wrapper that stands for a server's requestState in an
	// input_required result is sealed with a key derived from it
	// (HKDF-SHA256, never the secret itself), so a retry that reaches
	// another gateway of the fleet opens there and its server gets its
	// own state. "" means a random key of this process: a retry that
	// reaches another gateway is refused.
	FleetSecret string
	// Token is the bearer token every request must carry
	// (Authorization: Bearer) unless it carries a named client's
	// credential. "" turns authentication by the token off; the caller
	// allows that only on a loopback address (--mcp-auth none).
	Token string
	// Identities is the identity document (package identity/store) whose
	// named clients open the gateway each with its own credential, and
	// each reach only their own sessions; the gateway follows the file,
	// so a revoked client's sessions end within a second. "" means no
	// named clients: only the token.
	Identities string
	// IdentitiesInterval is how often the identity document is looked
	// at; 0 means store.DefaultInterval.
	IdentitiesInterval time.Duration
	// AllowHosts and AllowOrigins widen the Host and Origin checks, as
	// for the AEP endpoint (--allow-host, --allow-origin); nil means the
	// listen address, localhost and loopback IPs, and the gateway's own
	// origin.
	AllowHosts, AllowOrigins []string
	// MaxSessions bounds concurrent client sessions. At the bound, a new
	// session takes the place of the least recently used idle one (no
	// request in flight, no question open), which ends; when every
	// session is busy, a new one gets 503 with Retry-After. 0 means 64.
	MaxSessions int
	// SessionIdle ends a session that had no request, no message either
	// way and no request in flight for that long. 0 means 30m.
	SessionIdle time.Duration
	// MaxBody bounds one POSTed body; 0 means 16 MiB.
	MaxBody int64
	// MaxBuffered bounds the bytes of server messages a session keeps
	// for streams no connection carries (no GET stream open, a POST
	// stream dropped and not yet resumed); past it the session ends,
	// saying why. It also bounds the carried events kept for resumption.
	// Messages on a stream a connection is writing are not counted (see
	// StreamBuffered). 0 means 8 MiB.
	MaxBuffered int
	// StreamBuffered bounds the bytes of server messages waiting on an
	// event stream a connection carries, behind the message it is
	// writing (one message of any size always passes): past it the
	// client is not reading, and its connection is closed, saying why in
	// the log; what waited stays within MaxBuffered, so the client
	// resumes with Last-Event-ID (an HTTP+SSE or one-shot stream cannot
	// be resumed: its session ends). 0 means half of MaxBuffered.
	StreamBuffered int
	// ResumeEvents is how many delivered events each stream keeps for
	// Last-Event-ID resumption; 0 means 256. ResumeStreams is how many
	// answered POST streams a session keeps for resumption; 0 means 64.
	ResumeEvents, ResumeStreams int
	// StreamAfter is how long a request waits for its response before
	// its POST is answered with an event stream (with a priming event, so
	// a dropped connection can resume) instead of one JSON body. 0 means
	// 1s.
	StreamAfter time.Duration
	// Ping is the interval of SSE comment keep-alives on open streams;
	// 0 means 30s.
	Ping time.Duration
	// HeaderTimeout, BodyTimeout and IdleTimeout bound reading a
	// request's headers (0: 10s) and body (0: 60s), and a keep-alive
	// connection's idle time (0: 120s). MaxHeaderBytes bounds the headers
	// (0: 64 KiB).
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                          int
	// Logger receives logs; nil discards them. Tokens, session ids and
	// message content are never logged.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	setInt(&o.MaxSessions, 64)
	set(&o.SessionIdle, 30*time.Minute)
	if o.MaxBody <= 0 {
		o.MaxBody = 16 << 20
	}
	setInt(&o.MaxBuffered, 8<<20)
	setInt(&o.StreamBuffered, max(o.MaxBuffered/2, 1))
	setInt(&o.ResumeEvents, 256)
	setInt(&o.ResumeStreams, 64)
	set(&o.StreamAfter, time.Second)
	set(&o.Ping, 30*time.Second)
	set(&o.HeaderTimeout, 10*time.Second)
	set(&o.BodyTimeout, 60*time.Second)
	set(&o.IdleTimeout, 120*time.Second)
	setInt(&o.MaxHeaderBytes, 64<<10)
}

// Server is an MCP server over streamable HTTP (and HTTP+SSE) whose every
// client session is a bridge session of its own on one Host. It is safe
// for concurrent use; Close ends every session.
type Server struct {
	opts   Options
	log    *slog.Logger
	policy *hostguard.Policy
	token  [sha256.Size]byte
	auth   bool
	// holder is the principal of every request that carries the client
	// token (see principal).
	holder principal
	srv    *http.Server
	wg     sync.WaitGroup // session goroutines

	sealer *stateSealer // requestState wrappers
	// maxInflight bounds the requests in flight on a shared session
	// (maxSharedInflight; tests lower it before the first request).
	maxInflight int
	tools       toolHeaders // x-mcp-header bindings, for stateless requests
	// toolsMu is held while the gateway asks for the tool list
	// (learnTools), so it asks once.
	toolsMu sync.Mutex

	// clients is the directory of named clients in force (clients.go);
	// ids follows the identity document, idsCancel stops it and idsDone
	// is closed once it stopped (nil without Identities).
	clients   atomic.Pointer[identity.Directory]
	ids       store.Source
	idsCancel context.CancelFunc
	idsDone   chan struct{}
	// refusedMu guards refusedLogged: when each reason of a refused
	// credential was last logged.
	refusedMu     sync.Mutex
	refusedLogged map[string]time.Time

	// mu guards the fields below.
	mu       sync.Mutex
	sessions map[string]*session
	// shared holds each principal's shared session (shared.go).
	shared map[principal]*sharedSlot
	rounds roundTable
	closed bool
	// expiry ends the sessions of the next named client whose access
	// expires (sweepClients).
	expiry *time.Timer
	// forgot is signalled each time a session is forgotten (tests wait on
	// it).
	forgot chan struct{}
}

// New returns a gateway; serve it with Serve, or mount Handler.
func New(o Options) (*Server, error) {
	if o.Host == nil {
		return nil, errors.New("the gateway needs a bridge host")
	}
	if len(o.Session.Command) == 0 && o.Session.URL == "" {
		return nil, errors.New("the gateway needs an upstream: a command after --, or --url")
	}
	o.defaults()
	if o.Session.URL != "" && o.Session.ToolHeaders == nil {
		// Each stateless request has a connection of its own: the
		// bindings one tools/list teaches serve every later tools/call.
		o.Session.ToolHeaders = upstream.NewToolHeaders()
	}
	policy, err := hostguard.New(o.AllowHosts, o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	sealer, err := newStateSealer(o.FleetSecret)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, log: o.Logger, policy: policy, sealer: sealer, sessions: map[string]*session{}, shared: map[principal]*sharedSlot{}, maxInflight: maxSharedInflight, forgot: make(chan struct{}, 1),
		refusedLogged: map[string]time.Time{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.clients.Store(identity.NewDirectory(nil))
	if o.Identities != "" {
		ids, err := o.Host.WatchIdentities(store.Options{Path: o.Identities, Interval: o.IdentitiesInterval,
			OnLoad: func(d *identity.Directory) {
				// In force first, then said, as the operators are.
				s.SetClients(d)
				s.log.Info("named clients reloaded", "file", o.Identities, "clients", len(d.Document().Clients))
			},
			OnError: func(err error) { s.log.Error("named clients", "err", err) }})
		if err != nil {
			return nil, err
		}
		s.ids = ids
		s.clients.Store(ids.Directory())
		var ctx context.Context
		ctx, s.idsCancel = context.WithCancel(context.Background())
		s.idsDone = make(chan struct{})
		go s.watchClients(ctx)
	}
	if o.Token != "" {
		s.auth, s.token = true, sha256.Sum256([]byte(o.Token))
		s.holder = tokenHolder(o.Token)
	}
	return s, nil
}

// Serve serves the gateway on ln until Close, with the header, body and
// idle limits of Options. It returns nil once Close stopped it (or came
// first), and the listener's error otherwise.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil // closed before it began: nothing to serve
	}
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.opts.HeaderTimeout,
		IdleTimeout: s.opts.IdleTimeout, MaxHeaderBytes: s.opts.MaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	srv := s.srv
	s.mu.Unlock()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close ends every session (their questions dismissed, session.ended
// written, upstreams stopped), then stops serving; ctx bounds the wait
// for the HTTP server.
//
// Sessions end in parallel, and the wait for them is bounded even when
// an upstream process ignores its closed stdin and SIGTERM: each is
// stopped as Session says (stdin closed; SIGTERM to its process group
// after StopGrace; SIGKILL after KillTimeout more), so such a server
// holds Close up for StopGrace+KillTimeout, not forever, and is gone
// when Close returns.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	all := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		all = append(all, sess)
	}
	srv := s.srv
	if s.expiry != nil {
		s.expiry.Stop()
		s.expiry = nil
	}
	s.mu.Unlock()
	if s.idsCancel != nil {
		s.idsCancel()
		<-s.idsDone
	}
	for _, sess := range all {
		sess.end("the gateway is shutting down")
	}
	s.wg.Wait()
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
		return fmt.Errorf("stopping the MCP listener: %w", err)
	}
	return nil
}

// Sessions returns how many client sessions are live.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Errors of newSession.
var (
	errFull     = errors.New("every session the gateway serves (--max-sessions) is busy, each with a request in flight or a question open")
	errShutdown = errors.New("the gateway is shutting down")
)

// newSession starts a bridge session of kind for who (the named client
// client, or nil) on the host. At MaxSessions it first ends the least
// recently used idle session and waits, within ctx, for it to be gone
// (see makeRoom).
func (s *Server) newSession(ctx context.Context, kind sessionKind, who principal, client *identity.Client) (*session, error) {
	id, err := newSessionID()
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	sess := &session{id: id, kind: kind, owner: who, client: client, srv: s, log: s.log, seed: maphash.MakeSeed(), in: make(chan []byte),
		ctx: sctx, cancel: cancel, done: make(chan struct{}),
		streams: map[string]*stream{}, byRequest: map[string]*stream{}, byToken: map[string]*stream{},
		sentOn: map[string]*stream{}, relations: map[uint64]string{}, rounds: map[roundID]bool{}, lastActive: time.Now()}
	if kind == shared {
		sess.ctlReady = make(chan struct{}, 1)
	}
	if err := s.reserve(ctx, sess); err != nil {
		cancel()
		return nil, err
	}
	if client != nil {
		// A revocation that came between the request's authentication
		// and the session's registration ends it now; a record that
		// expires arms the timer.
		s.sweepClients()
	}
	o := s.opts.Session
	o.ClientConn = sess
	o.Client, o.ClientOut = nil, nil
	o.SharedClient = kind == shared
	log := s.log
	if client != nil {
		o.ClientIdentity = client.Name
		if o.Logger != nil {
			o.Logger = o.Logger.With("client", client.Name)
		}
		log = log.With("client", client.Name)
	}
	b, err := s.opts.Host.NewSession(o)
	if err != nil {
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
		s.wg.Done()
		cancel()
		return nil, fmt.Errorf("starting a bridge session: %w", err)
	}
	sess.mu.Lock()
	sess.b = b
	sess.log = log.With("session", b.Session())
	sess.mu.Unlock()
	sess.armIdle()
	go s.runSession(sess)
	return sess, nil
}

// reserve holds a slot of the session table for sess while its bridge
// session starts, making room when the table is full.
func (s *Server) reserve(ctx context.Context, sess *session) error {
	for range s.opts.MaxSessions + 8 { // each turn ends a session, or waits for one to end
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return errShutdown
		}
		if len(s.sessions) < s.opts.MaxSessions {
			s.sessions[sess.id] = sess
			s.wg.Add(1)
			s.mu.Unlock()
			return nil
		}
		all := make([]*session, 0, len(s.sessions))
		for _, other := range s.sessions {
			all = append(all, other)
		}
		s.mu.Unlock()
		gone, err := s.makeRoom(all)
		if err != nil {
			return err
		}
		select {
		case <-gone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errFull
}

// runSession runs one bridge session until it ends, then forgets it.
func (s *Server) runSession(sess *session) {
	defer s.wg.Done()
	err := sess.b.Run(sess.ctx)
	if err != nil {
		sess.end(err.Error())
		sess.log.Warn("the MCP session ended with an error", "err", err)
	}
	sess.Close()
	sess.mu.Lock()
	rounds := make([]roundID, 0, len(sess.rounds))
	for id := range sess.rounds {
		rounds = append(rounds, id)
	}
	sess.mu.Unlock()
	s.mu.Lock()
	if s.sessions[sess.id] == sess {
		delete(s.sessions, sess.id)
	}
	for _, id := range rounds {
		s.rounds.forget(id, sess)
	}
	if sess.kind == shared {
		s.forgetSharedLocked(sess)
		s.rounds.forgetSession(sess)
	}
	s.mu.Unlock()
	select {
	case s.forgot <- struct{}{}:
	default:
	}
	sess.mu.Lock()
	reason := sess.reason
	sess.mu.Unlock()
	if reason != "" {
		sess.log.Info("MCP session ended", "reason", reason)
	}
	close(sess.done)
}

// lookup returns the live session with id, of kind, that who opened: a
// session is reachable only by its own principal.
func (s *Server) lookup(id string, kind sessionKind, who principal) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil || sess.kind != kind || sess.owner != who {
		return nil
	}
	return sess
}

// newSessionID returns a session id: 128 random bits in hex, visible
// ASCII as MCP basic/transports (Session Management) requires, and
// unguessable, since it is what keeps sessions apart.
func newSessionID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a session id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

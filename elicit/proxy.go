package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// Route says who may answer a question.
type Route int

// Routes (the --route flag).
const (
	// RouteBoth sends a question to operators and, when the client can
	// elicit, to the client too; the first answer wins.
	RouteBoth Route = iota
	// RouteRemote sends questions to operators only.
	RouteRemote
	// RouteClient leaves questions to the MCP client; the bus observes.
	RouteClient
)

// ParseRoute parses a --route value.
func ParseRoute(s string) (Route, error) {
	switch s {
	case "both", "":
		return RouteBoth, nil
	case "remote":
		return RouteRemote, nil
	case "client":
		return RouteClient, nil
	}
	return 0, fmt.Errorf("unknown route %q: want remote, client or both", s)
}

func (r Route) String() string {
	switch r {
	case RouteBoth:
		return "both"
	case RouteRemote:
		return "remote"
	case RouteClient:
		return "client"
	}
	return fmt.Sprintf("Route(%d)", int(r))
}

// Publisher publishes events that are not part of a question's lifecycle
// (a refused schema). The bus emitter implements it.
type Publisher interface {
	Emit(d aep.Draft) (aep.Event, []byte, error)
}

// ClientInfo is what the client said about itself at initialize.
type ClientInfo struct {
	Name, Version   string
	ProtocolVersion string
}

// Options configure a Proxy.
type Options struct {
	// Client is the MCP client's side; Server the MCP server's. Required.
	Client, Server Conn
	// Manager owns the questions: the attention lifecycle, an
	// *attention.Manager outside tests. Required.
	Manager Lifecycle
	// Publisher records refused schemas on the bus. Nil skips that.
	Publisher Publisher
	// Route says who answers; the zero value is RouteBoth.
	Route Route
	// Keepalive is the progress interval while a question is pending;
	// zero disables keepalive progress.
	Keepalive time.Duration
	// Name overrides the server's display name (the subject of its
	// questions). Empty means the server's serverInfo.name.
	Name string
	// OnSession is called once, with what the client said about itself,
	// before the first message is forwarded (to emit session.started).
	OnSession func(ClientInfo)
	// Logger receives operational logs; nil discards them. Message
	// contents are never logged.
	Logger *slog.Logger
}

// Proxy relays one MCP session. Create it with New, run it with Run, and
// end it with Close once the session is settled.
//
// Concurrency: Run starts a reader goroutine per stream and the keepalive
// ticker; the ticker stops when Run returns, the readers when Close closes
// the streams, and Close waits for all of them. Deliveries from the
// attention lifecycle may arrive on any goroutine; all shared state is
// guarded by mu. Inflight and ServerName are safe to call at any time;
// FailInflight writes to the client, so it belongs before Close.
type Proxy struct {
	client, server Conn
	mgr            Lifecycle
	pub            Publisher
	route          Route
	keepalive      time.Duration
	name           string
	onSession      func(ClientInfo)
	log            *slog.Logger
	// maxTracked bounds inflight, questions, urlIDs, withdrawn and rounds
	// (defaultMaxTracked); tests lower it.
	maxTracked int
	// newID makes the ids of the bridge's own requests unique; tests
	// replace it to make them predictable.
	newID func() string

	// wg counts the goroutines Run started; Close waits for them.
	wg sync.WaitGroup
	// life guards closed, so that Run starts nothing once Close began.
	life   sync.Mutex
	closed bool

	// open counts the questions raised and not yet resolved.
	open atomic.Int64
	// refused counts the questions refused at a limit (logRefused), and
	// dupes those refused for an elicitationId already pending.
	refused, dupes atomic.Int64

	// stopping closes with Close. running is set once Run started
	// deferredLoop; life guards it.
	stopping chan struct{}
	running  bool

	// dmu guards the work handed to deferredLoop (later): queue, in
	// order, and drained, set once deferredLoop ran its last piece at
	// Close. wake tells deferredLoop that queue holds work.
	dmu     sync.Mutex
	queue   []func()
	drained bool
	wake    chan struct{}

	// mu guards the fields below.
	mu sync.Mutex
	// endReason is why requests that arrive after Run returned fail
	// (FailInflight's reason), or "".
	endReason string
	// inflight holds the client's requests awaiting the server's
	// response, by id key; inflightOrder lists its keys, oldest first
	// (admit).
	inflight      map[string]*inflight
	inflightOrder []string
	// abandoned holds the id keys of client requests the bridge stopped
	// waiting for (forgetRequest), whose late response is dropped;
	// abandonedOrder lists them, oldest first.
	abandoned      map[string]struct{}
	abandonedOrder []string
	// goneRequests and goneQuestions are the tombstones of client
	// requests and server questions the tables above forgot, whose late
	// responses are stale (stale.go).
	goneRequests, goneQuestions tombstones
	// progress is the highest progress value sent per progressToken key,
	// for the tokens of the requests in inflight only.
	progress map[string]float64
	// questions holds the server's elicitation requests being answered,
	// by the server's request id key; questionOrder lists its keys,
	// oldest first (admit).
	questions     map[string]*question
	questionOrder []string
	// withdrawn holds the question ids of server requests whose client
	// copy was withdrawn, by server request id; the client's late answer
	// to them is recorded as one that lost and reaches nobody.
	withdrawn map[string]string
	// withdrawnOrder lists the keys of withdrawn, oldest first (admit).
	withdrawnOrder []string
	// urlIDs holds who owns each elicitationId of a pending URL-mode
	// question (claimURLLocked); urlOrder lists its keys, oldest first
	// (admit); urlSeq numbers the bridge's own owners.
	urlIDs   map[string]urlOwner
	urlOrder []string
	urlSeq   int
	// client capabilities as the client declared them.
	clientElicit, clientForm, clientURL bool
	clientInfo                          ClientInfo
	sessionStarted                      bool
	serverName                          string
	initID                              string
	// related is the id of the client request on whose response stream
	// the server's message being handled came; only the server's reader
	// goroutine uses it.
	related json.RawMessage
	// rounds holds the multi round-trip exchanges in progress, by the
	// bridge-owned id of their current retry; states by requestState,
	// for exchanges whose input_required the client also got.
	rounds map[string]*round
	states map[string]*round
	// roundOrder lists the keys of rounds, oldest first (admit).
	roundOrder []string
	// stateOrder lists the keys of states, oldest first.
	stateOrder []string
	// byClient holds the exchanges the bridge answers alone (the client
	// never sees their input_required), by the client's request id key.
	byClient map[string]*round
}

type inflight struct {
	id     json.RawMessage
	method string
	token  json.RawMessage
	// params are kept for requests that may end in input_required (MCP
	// 2026-07-28), so the bridge can retry them; clientElicit says whether
	// the client itself declared elicitation for this request.
	params       json.RawMessage
	clientElicit bool
}

type question struct {
	serverID json.RawMessage
	qid      string
	// related is the id key of the client request whose response stream
	// carried the question ("" when the link is unknown); ended says that
	// request ended, so its dismissal sends the server cancel.
	related  string
	ended    bool
	toClient bool
	// clientOnly: operators cannot answer (route client, or a schema the
	// form cannot carry); a client error goes back to the server.
	clientOnly bool
	done       bool
	// elicitationID is a URL-mode question's elicitationId.
	elicitationID string
	// forgotten: more than maxTracked questions were pending and this
	// one, the oldest, was dismissed to make room (ended is set too).
	forgotten bool
}

// New returns a Proxy.
func New(o Options) *Proxy {
	p := &Proxy{
		client: o.Client, server: o.Server, mgr: o.Manager, pub: o.Publisher, route: o.Route,
		keepalive: o.Keepalive, name: o.Name, onSession: o.OnSession, log: o.Logger,
		inflight: map[string]*inflight{}, abandoned: map[string]struct{}{}, progress: map[string]float64{},
		questions: map[string]*question{}, withdrawn: map[string]string{}, urlIDs: map[string]urlOwner{},
		rounds: map[string]*round{}, states: map[string]*round{}, byClient: map[string]*round{}, newID: aep.NewID,
		wake: make(chan struct{}, 1), stopping: make(chan struct{}), maxTracked: defaultMaxTracked,
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

// Ending says which side ended the session.
type Ending struct {
	// ClientClosed is true when the client went away; false when the
	// server did (or the context was cancelled, with Err set).
	ClientClosed bool
	Err          error
}

// ErrClosed is the Err of the Ending Run returns when Close came first.
var ErrClosed = errors.New("the proxy was closed before Run")

// Run relays messages until the client or the server goes away or ctx is
// cancelled, and says which. Call it once.
//
// When Run returns, the keepalive ticker has stopped and each reader stops
// after the message it may be reading, but both streams are still open:
// the caller ends the session in its own order (settle the questions,
// FailInflight, which writes to the client, record the end) and then calls
// Close, which closes the streams and waits for the readers.
func (p *Proxy) Run(ctx context.Context) Ending {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan Ending, 2)
	p.life.Lock()
	if p.closed {
		p.life.Unlock()
		return Ending{Err: ErrClosed}
	}
	p.wg.Add(3)
	go p.clientLoop(ctx, ended)
	go p.serverLoop(ctx, ended)
	go p.deferredLoop()
	p.running = true
	if p.keepalive > 0 {
		p.wg.Add(1)
		go p.keepaliveLoop(ctx)
	}
	p.life.Unlock()
	select {
	case e := <-ended:
		return e
	case <-ctx.Done():
		return Ending{Err: ctx.Err()}
	}
}

// Close closes the server's stream, then the client's, and waits for every
// goroutine Run started. It is the last call on a Proxy: call it after Run
// returns, or from another goroutine to stop a running proxy (Run then
// returns as if the peer had gone). Later calls only wait. It returns the
// streams' Close errors.
func (p *Proxy) Close() error {
	p.life.Lock()
	first := !p.closed
	p.closed = true
	p.life.Unlock()
	var err error
	if first {
		close(p.stopping)
		err = errors.Join(p.server.Close(), p.client.Close())
	}
	p.wg.Wait()
	return err
}

// later runs fn on the proxy's own goroutine, in order with the other work
// handed over this way. An answer arrives on the goroutine of whoever gave
// it (an operator's connection, holding the session's command intake, or
// a timer): what it sends the server and the client must not block that
// goroutine on a peer that stopped reading. later never blocks: the reader
// goroutines hand work over too (a scripted answer, a retry), and a reader
// that waited behind a write to a peer that stopped reading could hold up
// that very peer. The queue needs no bound of its own: each piece of work
// answers one question or one round, which the proxy bounds (maxTracked).
//
// Before Run, fn runs at once. At Close, deferredLoop runs what is queued
// before it stops, and fn handed over after that runs at once on the
// caller's goroutine (the streams are closed by then, so its writes end at
// once): no answer is dropped unsent.
func (p *Proxy) later(fn func()) {
	p.life.Lock()
	running := p.running
	p.life.Unlock()
	p.dmu.Lock()
	if !running || p.drained {
		p.dmu.Unlock()
		fn()
		return
	}
	p.queue = append(p.queue, fn)
	p.dmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // deferredLoop has been woken already
	}
}

// deferredLoop runs what later handed over until Close, and then what is
// still queued.
func (p *Proxy) deferredLoop() {
	defer p.wg.Done()
	for {
		select {
		case <-p.wake:
			p.runQueued(false)
		case <-p.stopping:
			p.runQueued(true)
			return
		}
	}
}

// runQueued runs the queued work until the queue is empty; last marks the
// queue drained for good under the same lock that found it empty, so no
// piece of work is handed over between the two.
func (p *Proxy) runQueued(last bool) {
	for {
		p.dmu.Lock()
		work := p.queue
		p.queue = nil
		if len(work) == 0 {
			p.drained = last
			p.dmu.Unlock()
			return
		}
		p.dmu.Unlock()
		for _, fn := range work {
			fn()
		}
	}
}

// clientLoop reads the client's messages until its stream ends or Run
// returns.
func (p *Proxy) clientLoop(ctx context.Context, ended chan<- Ending) {
	defer p.wg.Done()
	p.readLoop(ctx, ended, true)
}

// serverLoop reads the server's messages until its stream ends or Run
// returns.
func (p *Proxy) serverLoop(ctx context.Context, ended chan<- Ending) {
	defer p.wg.Done()
	p.readLoop(ctx, ended, false)
}

// readLoop relays one peer's messages; fromClient says which peer.
func (p *Proxy) readLoop(ctx context.Context, ended chan<- Ending, fromClient bool) {
	src, dst, handle, peer := p.server, p.client, p.fromServer, "server"
	if fromClient {
		src, dst, handle, peer = p.client, p.server, p.fromClient, "client"
	}
	read := func() (jsonrpc.Frame, error) { return readFrame(src) }
	if !fromClient {
		if rr, ok := src.(RelatedFrameReader); ok {
			read = func() (jsonrpc.Frame, error) {
				f, related, err := rr.ReadRelatedFrame()
				p.related = related
				return f, err
			}
		} else if rr, ok := src.(RelatedReader); ok {
			read = func() (jsonrpc.Frame, error) {
				m, related, err := rr.ReadRelated()
				p.related = related
				return jsonrpc.Frame{Head: m}, err
			}
		}
	}
	for {
		fr, err := read()
		if err == nil && ctx.Err() != nil {
			// Run returned: the session is ending and nothing more is
			// relayed. A request still gets its answer (an error); the
			// reader goes on until Close ends the stream.
			p.refuseLate(fr, fromClient)
			continue
		}
		var tl *TooLargeError
		switch {
		case errors.As(err, &tl) && fromClient:
			// A Conn that cannot stream skipped it; no id can be read.
			p.log.Warn("client sent an oversized message; answered with an error", "limit", tl.Limit)
			p.writeClient(errorResponse(nil, codeInvalidRequest, "Invalid Request: "+tl.Error()))
		case errors.As(err, &tl):
			p.log.Warn("server sent an oversized message; it was skipped", "limit", tl.Limit)
		case err != nil:
			switch {
			case errors.Is(err, io.EOF):
			case errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed):
				// Close closed the stream under its reader: the end of
				// the session, not a failure.
				p.log.Debug("the " + peer + "'s stream was closed")
			default:
				p.log.Info("reading from the "+peer+" failed", "err", err)
			}
			ended <- Ending{ClientClosed: fromClient}
			return
		case fr.Rest != nil:
			p.relayStream(fr.Head, fr.Rest, fromClient)
		default:
			handle(fr.Head)
			p.flushIfIdle(src, dst)
		}
	}
}

// readFrame reads the next message of c, as a stream when c hands over
// large ones that way.
func readFrame(c Conn) (jsonrpc.Frame, error) {
	if fr, ok := c.(FrameReader); ok {
		return fr.ReadFrame()
	}
	b, err := c.ReadMessage()
	return jsonrpc.Frame{Head: b}, err
}

// batcher is a Conn that can defer writes while input is buffered.
type batcher interface {
	WriteDeferred(msg []byte)
	Buffered() bool
	Flush() error
}

// forward writes a relayed message to dst: deferred while src already
// holds more input (a burst leaves in one system call), at once otherwise.
func (p *Proxy) forward(src, dst Conn, b []byte) {
	sb, ok1 := src.(batcher)
	db, ok2 := dst.(batcher)
	if ok1 && ok2 && sb.Buffered() {
		db.WriteDeferred(b)
		return
	}
	if err := dst.WriteMessage(b); err != nil {
		p.log.Debug("writing a relayed message failed", "err", err)
	}
}

// flushIfIdle writes what was deferred once src has no buffered input.
func (p *Proxy) flushIfIdle(src, dst Conn) {
	sb, ok1 := src.(batcher)
	db, ok2 := dst.(batcher)
	if ok1 && ok2 && !sb.Buffered() {
		if err := db.Flush(); err != nil {
			p.log.Debug("flushing relayed messages failed", "err", err)
		}
	}
}

func (p *Proxy) writeClient(b []byte) {
	if err := p.client.WriteMessage(b); err != nil {
		p.log.Debug("writing to the client failed", "err", err)
	}
}

func (p *Proxy) writeServer(b []byte) {
	if err := p.server.WriteMessage(b); err != nil {
		p.log.Debug("writing to the server failed", "err", err)
	}
}

// refuseLate answers a request that arrived after Run returned with the
// error FailInflight gives (or one saying the session is ending); anything
// else is dropped.
func (p *Proxy) refuseLate(fr jsonrpc.Frame, fromClient bool) {
	env := drain(fr.Head, fr.Rest)
	if !env.IsRequest() {
		return
	}
	p.mu.Lock()
	reason := p.endReason
	p.mu.Unlock()
	if reason == "" {
		reason = "the bridge's session is ending; start a new one"
	}
	if fromClient {
		p.writeClient(errorResponse(env.ID, codeConnectionClosed, reason))
		return
	}
	p.writeServer(errorResponse(env.ID, codeConnectionClosed, "the bridge's session is ending: the MCP client is gone"))
}

// FailInflight answers every client request still waiting for the server
// with a JSON-RPC error carrying reason, so nothing hangs when the server is
// gone.
func (p *Proxy) FailInflight(reason string) {
	p.mu.Lock()
	p.endReason = reason // requests that arrive later get it too
	var ids []json.RawMessage
	for _, k := range slices.Sorted(maps.Keys(p.inflight)) {
		ids = append(ids, p.untrackLocked(k).id)
	}
	// The client's retries that wait for a retry of the bridge's
	// (clientRetry) await the server too.
	for _, k := range slices.Sorted(maps.Keys(p.rounds)) {
		rd := p.rounds[k]
		ids = append(ids, rd.clientRt...)
		rd.clientRt = nil
	}
	p.mu.Unlock()
	for _, id := range ids {
		p.writeClient(errorResponse(id, codeConnectionClosed, reason))
	}
}

// Inflight returns how many client requests await the server.
func (p *Proxy) Inflight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inflight)
}

// ServerName returns the name questions are attributed to.
func (p *Proxy) ServerName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.subjectLocked()
}

// clientName is the name the bus records for the client's answers.
func (p *Proxy) clientName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clientInfo.Name == "" {
		return "mcp-client"
	}
	return p.clientInfo.Name
}

func (p *Proxy) subjectLocked() string {
	switch {
	case p.name != "":
		return p.name
	case p.serverName != "":
		return p.serverName
	}
	return "mcp-server"
}

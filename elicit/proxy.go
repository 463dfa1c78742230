package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
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
	// ClientName names the client on the answers it gives itself (their
	// by) instead of the name it gives itself: the authenticated name of
	// a named client of the gateway, as "client:NAME". Empty means the
	// client's clientInfo.name.
	ClientName string
	// OnSession is called once, with what the client said about itself,
	// before the first message is forwarded (to emit session.started).
	OnSession func(ClientInfo)
	// Logger receives operational logs; nil discards them. Message
	// contents are never logged.
	Logger *slog.Logger
	// Policy, when set, decides every tools/call before the server sees
	// it (hold.go); nil passes every call, as without a policy.
	Policy PolicySource
	// PolicyClient is the client's authenticated name the policy matches
	// rules' client on; "" when the client has none.
	PolicyClient string
	// Session is the AEP session's id, which binds allow-session
	// approvals to the session.
	Session string
	// Redactor is the §9.4 pipeline tool.requested's args_redacted goes
	// through; nil means the default pipeline.
	Redactor *aep.Redactor
	// OwnStates gives the client, for each input_required round it also
	// gets, a requestState of the proxy's own, and the server its own
	// back on the client's retry: for a proxy that serves many clients'
	// requests on one server, whose requestStates may be equal (a server
	// may hand every caller the same), so that each retry finds its own
	// round. False passes the server's requestState through.
	OwnStates bool
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
	clientAs       string // Options.ClientName
	ownStates      bool   // Options.OwnStates
	onSession      func(ClientInfo)
	log            *slog.Logger
	// pol decides tools/call (hold.go); nil when no policy is in force.
	// polClient and session are what the policy matches and binds
	// grants to; mem keeps allow-session grants; red redacts arguments.
	pol       PolicySource
	polClient string
	session   string
	mem       *policy.Memory
	red       *aep.Redactor
	// maxTracked bounds the tables below (defaultMaxTracked); tests lower
	// it before Run.
	maxTracked int
	// newID makes the ids of the bridge's own requests unique; tests
	// replace it to make them predictable.
	newID func() string
	// ctx is what the proxy's own writes run under: writes after Run
	// returned still go out (FailInflight), and none starts after Close.
	ctx  context.Context
	stop context.CancelFunc

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
	// Each exchange a peer must finish is in one bounded table (see
	// doc.go), by the id key (or name) that places the messages that end
	// it:
	//   - inflight: the client's requests awaiting the server's response;
	//   - abandoned: client requests the bridge stopped waiting for
	//     (forgetRequest), whose late response is dropped;
	//   - questions: the server's elicitation requests being answered;
	//   - withdrawn: the question ids of server requests whose client copy
	//     was withdrawn: the client's late answer to them is recorded as
	//     one that lost, and reaches nobody;
	//   - urlIDs: who owns each elicitationId of a pending URL-mode
	//     question (claimURLLocked); urlSeq numbers the bridge's own;
	//   - rounds: the multi round-trip exchanges in progress, by the
	//     bridge-owned id of their current retry;
	//   - states: exchanges whose input_required the client also got, by
	//     requestState, for the client's own retry (maxStates).
	inflight  *table[*inflight]
	abandoned *table[struct{}]
	questions *table[*question]
	withdrawn *table[string]
	urlIDs    *table[urlOwner]
	rounds    *table[*round]
	states    *table[*round]
	// held are the tools/call held for approval, and calls those the
	// server was given under a policy, until their response (hold.go);
	// both by the client's request id key.
	held  *table[*heldCall]
	calls *table[*toolCall]
	// retries are the approvals of approved calls the server answered
	// with input_required, by its requestState (noteRetry).
	retries *table[*policy.Grant]
	// toolEv holds tool.* events for the emitter until the reader that
	// queued them would wait (toolevents.go); it has its own locks.
	toolEv toolEvents
	urlSeq int
	// goneRequests and goneQuestions are the tombstones of client
	// requests and server questions the tables above forgot, whose late
	// responses are stale (stale.go).
	goneRequests, goneQuestions tombstones
	// progress is the highest progress value sent per progressToken key,
	// for the tokens of the requests in inflight only.
	progress map[string]float64
	// byClient holds the exchanges the bridge answers alone (the client
	// never sees their input_required), by the client's request id key;
	// each is a request in inflight.
	byClient map[string]*round
	// client capabilities as the client declared them.
	clientElicit, clientForm, clientURL bool
	clientInfo                          ClientInfo
	sessionStarted                      bool
	// serverName is the first name the server gave; renameLogged is set
	// once a later, different one was logged (identity.go).
	serverName   string
	renameLogged bool
	initID       string
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

// New returns a Proxy.
func New(o Options) *Proxy {
	p := &Proxy{
		client: o.Client, server: o.Server, mgr: o.Manager, pub: o.Publisher, route: o.Route,
		keepalive: o.Keepalive, name: o.Name, clientAs: o.ClientName, onSession: o.OnSession, log: o.Logger,
		progress: map[string]float64{}, byClient: map[string]*round{}, newID: aep.NewID,
		wake: make(chan struct{}, 1), stopping: make(chan struct{}), maxTracked: defaultMaxTracked,
		pol: o.Policy, polClient: o.PolicyClient, session: o.Session, mem: policy.NewMemory(0), red: o.Redactor,
		ownStates: o.OwnStates,
	}
	if p.red == nil {
		p.red = aep.NewRedactor(aep.RedactOptions{})
	}
	p.ctx, p.stop = context.WithCancel(context.Background())
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.setBound(defaultMaxTracked)
	return p
}

// setBound makes the tables anew with max entries each (states keeps
// maxStates); tests lower it before Run.
func (p *Proxy) setBound(max int) {
	p.maxTracked = max
	p.inflight, p.abandoned, p.questions = newTable[*inflight](max), newTable[struct{}](max), newTable[*question](max)
	p.withdrawn, p.urlIDs, p.rounds = newTable[string](max), newTable[urlOwner](max), newTable[*round](max)
	p.states = newTable[*round](maxStates)
	p.held, p.calls, p.retries = newTable[*heldCall](max), newTable[*toolCall](max), newTable[*policy.Grant](max)
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
	// The tool.* events of the session are all emitted when Run returns,
	// so the caller's session.ended follows them.
	p.runTools(true)
	defer p.flushTools(nil)
	defer p.runTools(false)
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
		p.stop()
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
	src, dst, peer := p.server, p.client, "server"
	if fromClient {
		src, dst, peer = p.client, p.server, "client"
	}
	// held says dst holds relayed messages back (Frame.More) until the
	// end of the burst they came in.
	held := false
	for {
		// Read under the proxy's own context, not Run's: after Run
		// returns the reader goes on until Close, answering late requests
		// (refuseLate).
		fr, err := src.Read(p.ctx)
		if err == nil && ctx.Err() != nil {
			// Run returned: the session is ending and nothing more is
			// relayed. A request still gets its answer (an error); the
			// reader goes on until Close ends the stream.
			p.refuseLate(fr, fromClient)
			p.flushTools(nil)
			continue
		}
		switch {
		case err != nil:
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, context.Canceled):
			case errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed):
				// Close closed the stream under its reader: the end of
				// the session, not a failure.
				p.log.Debug("the " + peer + "'s stream was closed")
			default:
				p.log.Info("reading from the "+peer+" failed", "err", err)
			}
			if held {
				p.write(p.ctx, dst, Frame{})
			}
			ended <- Ending{ClientClosed: fromClient}
			return
		case fr.Rest != nil:
			if held {
				p.write(ctx, dst, Frame{})
				held = false
			}
			p.relayStream(ctx, fr, fromClient)
		case p.relay(ctx, fr, fromClient):
			held = fr.More
		case held && !fr.More:
			// The burst ended with a message that was not relayed: send
			// what dst holds.
			p.write(ctx, dst, Frame{})
			held = false
		}
		if !fr.More && p.pendingTools() {
			// Nothing more is buffered to read, and what this burst
			// forwarded is out: the reader emits the tool.* events it
			// queued now, while the peers work, before it waits.
			p.flushTools(nil)
		}
	}
}

// relay handles one whole message (or batch) from a peer and forwards
// what must go on to the other, held back while more input is buffered
// (a burst leaves in one write); it reports whether it forwarded anything.
func (p *Proxy) relay(ctx context.Context, fr Frame, fromClient bool) bool {
	dst := p.client
	if fromClient {
		dst = p.server
	}
	out, ok := p.each(fr, fromClient)
	if !ok || out == nil {
		return false
	}
	p.write(ctx, dst, Frame{Head: out, More: fr.More})
	return true
}

// write writes f to c, logging a failure: a peer that went away is the
// reader's to notice.
func (p *Proxy) write(ctx context.Context, c Conn, f Frame) {
	if err := c.Write(ctx, f); err != nil {
		p.log.Debug("writing a relayed message failed", "err", err)
	}
}

func (p *Proxy) writeClient(b []byte) {
	if err := p.client.Write(p.ctx, Frame{Head: b}); err != nil {
		p.log.Debug("writing to the client failed", "err", err)
	}
}

func (p *Proxy) writeServer(b []byte) {
	if err := p.server.Write(p.ctx, Frame{Head: b}); err != nil {
		p.log.Debug("writing to the server failed", "err", err)
	}
}

// refuseLate answers a request that arrived after Run returned with the
// error FailInflight gives (or one saying the session is ending); anything
// else is dropped.
func (p *Proxy) refuseLate(fr Frame, fromClient bool) {
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
	for _, k := range p.inflight.keys() {
		ids = append(ids, p.untrackLocked(k).id)
	}
	// The client's retries that wait for a retry of the bridge's
	// (clientRetry) await the server too.
	for _, k := range p.rounds.keys() {
		rd, _ := p.rounds.get(k)
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
	return p.inflight.len()
}

// ServerName returns the name questions are attributed to.
func (p *Proxy) ServerName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.subjectLocked()
}

// clientName is the name the bus records for the client's answers.
func (p *Proxy) clientName() string {
	if p.clientAs != "" {
		return p.clientAs // fixed at construction
	}
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

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// sessionKind says which transport a session's client speaks.
type sessionKind int

const (
	// stateful is a streamable HTTP session with an Mcp-Session-Id
	// (MCP 2025-03-26 to 2025-11-25).
	stateful sessionKind = iota
	// oneShot serves stateless MCP 2026-07-28 requests: it lives while
	// its request (and a retry that continues it) is in flight.
	oneShot
	// legacySSE is a 2024-11-05 HTTP+SSE session.
	legacySSE
	// shared serves the stateless MCP 2026-07-28 requests of one
	// principal to a spawned server (shared.go): one long-lived server
	// process that every such request of the principal reaches, under
	// an id of the gateway's own.
	shared
)

// maxRelations bounds the relations a session remembers between a remote
// upstream's messages and the requests they relate to; each is used as
// soon as the proxy forwards its message.
const maxRelations = 64

// session is one MCP client session: one bridge session with its own
// upstream, AEP session, log and questions, and the streams its HTTP
// requests read. It is the bridge session's client connection
// (elicit.Conn and bridge.RelatedWriter).
//
// Concurrency: HTTP handlers add client messages (in) and attach to
// streams; the proxy's goroutines write server messages, which route
// queues on streams. mu guards all stream and routing state.
type session struct {
	id    string
	kind  sessionKind
	owner principal // who opened it; only they reach it
	// client is the named client that opened it, or nil (the token's
	// holder, anonymous); fixed at construction.
	client *identity.Client
	srv    *Server
	seed   maphash.Seed

	in     chan []byte
	ctx    context.Context // ends when the session ends
	cancel context.CancelFunc
	done   chan struct{} // closed when the bridge session has returned

	// mu guards the fields below. b and log are set under it once the
	// bridge session started (b is nil until then); only makeRoom can
	// see the session before that, and reads b under mu. Everything else
	// reaches the session after newSession returned it.
	mu      sync.Mutex
	b       *bridge.Bridge
	log     *slog.Logger
	streams map[string]*stream
	// finished lists finished POST streams, oldest first, kept for
	// resumption while the window allows.
	finished []*stream
	standing *stream // the GET (or legacy) stream; nil until needed
	nStreams int
	// byRequest maps a client request's id key to the stream awaiting its
	// response; byToken a progress token's key to its request's stream;
	// sentOn a server request's id key to the stream it went out on.
	byRequest map[string]*stream
	byToken   map[string]*stream
	sentOn    map[string]*stream
	relations map[uint64]string
	relOrder  []uint64
	// retained counts the bytes of carried events kept for resumption.
	retained int
	// version is the protocol version initialize negotiated.
	version string
	initID  string
	// rounds are the input_required rounds this one-shot session handed
	// out, still open for a retry.
	rounds map[roundID]bool
	// A shared session's own: seq numbers the ids it gives requests
	// upstream; used is set once a request was registered; ctl holds
	// the messages the gateway itself sends the proxy (cancellations,
	// refusals of server requests), read before in, and ctlReady says
	// that it holds one.
	seq        uint64
	used       bool
	ctl        [][]byte
	ctlReady   chan struct{}
	lastActive time.Time
	idle       *time.Timer
	closed     bool
	reason     string // why the session ended, once it did
}

func (s *session) touchLocked() { s.lastActive = time.Now() }

// ReadMessage returns the client's next message; io.EOF once the session
// ends.
func (s *session) ReadMessage() ([]byte, error) {
	for {
		s.mu.Lock()
		if len(s.ctl) > 0 {
			m := s.ctl[0]
			s.ctl = s.ctl[1:]
			s.mu.Unlock()
			return m, nil
		}
		s.mu.Unlock()
		select {
		case m := <-s.in:
			return m, nil
		case <-s.ctlReady: // nil, and never ready, but for a shared session
		case <-s.ctx.Done():
			return nil, io.EOF
		}
	}
}

// Close ends the client side: streams finish once their queued events
// are written, and no client message is read any more.
func (s *session) Close() error {
	s.end("")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeStreamsLocked()
	return nil
}

// end ends the session with reason, once; "" keeps an earlier reason.
func (s *session) end(reason string) {
	s.mu.Lock()
	if s.reason == "" && reason != "" {
		s.reason = reason
	}
	s.mu.Unlock()
	s.cancel()
}

func (s *session) closeStreamsLocked() {
	if s.closed {
		return
	}
	s.closed = true
	if s.idle != nil {
		s.idle.Stop()
	}
	reason := s.reason
	if reason == "" {
		reason = "the MCP session ended"
	}
	for _, st := range s.streams {
		// A request the proxy never answered still gets an answer.
		for k := range st.awaiting {
			s.queueLocked(st, errorMessage(st.replyID(k), codeSessionEnded, reason), true)
			delete(s.byRequest, k)
		}
		clear(st.awaiting)
		st.finished = true
		st.wake()
	}
}

// codeSessionEnded is the JSON-RPC error code of a request whose session
// ended before its server answered. JSON-RPC 2.0 §5.1 leaves -32000 to
// -32099 to implementations; -32000 is what the TypeScript SDK calls
// ConnectionClosed, and what the bridge answers when its server exits.
const codeSessionEnded = -32000

// Related records that msg came on the response stream of the client
// request with id id (bridge.RelatedWriter).
func (s *session) Related(msg []byte, id json.RawMessage) {
	if !bytes.Contains(msg, []byte(`"method"`)) {
		return // a response: routed by its own id
	}
	h := maphash.Bytes(s.seed, msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.relations[h]; !dup {
		s.relOrder = append(s.relOrder, h)
	}
	s.relations[h] = idKey(id)
	if len(s.relOrder) > maxRelations {
		delete(s.relations, s.relOrder[0])
		s.relOrder = s.relOrder[1:]
	}
}

// WriteMessage routes one message the proxy sends to the client to the
// stream that must carry it; a batch is routed element by element.
func (s *session) WriteMessage(msg []byte) error {
	msgs, _, ok := split(msg)
	if !ok {
		s.log.Warn("the bridge wrote a message that is not JSON-RPC; it was not sent")
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchLocked()
	for _, m := range msgs {
		s.routeLocked(m)
	}
	if waiting := s.waitingLocked(); waiting > s.srv.opts.MaxBuffered && !s.closed {
		reason := fmt.Sprintf("the client left %d bytes of server messages unread (limit %d): it has no open stream for them; open a GET stream, or resume with Last-Event-ID", waiting, s.srv.opts.MaxBuffered)
		s.log.Warn("ending the session: its client does not read", "waiting_bytes", waiting)
		if s.reason == "" {
			s.reason = reason
		}
		s.cancel()
	}
	return nil
}

// waitingLocked is the bytes queued on streams no connection carries: what
// waits for a GET or a resumption.
func (s *session) waitingLocked() int {
	n := 0
	for _, st := range s.streams {
		if !st.attached && !st.orphan {
			n += st.pending
		}
	}
	return n
}

// routeLocked queues one message on its stream (MCP basic/transports):
//   - a response on the stream of the POST that carried its request;
//   - a request or notification that relates to an open request (its
//     progress token, the request a cancellation names, or the stream a
//     remote upstream sent it on) on that request's stream;
//   - anything else on the standing GET stream, or for a 2026-07-28
//     one-shot session the stream of its request.
func (s *session) routeLocked(m json.RawMessage) {
	if s.kind == legacySSE {
		s.queueLocked(s.fallbackLocked(), m, false) // HTTP+SSE has one stream
		return
	}
	env, ok := parse(m)
	if !ok {
		s.log.Warn("the bridge wrote a message that is not a JSON-RPC object; it was not sent")
		return
	}
	if env.isResponse() {
		s.respondLocked(m, &env)
		return
	}
	if s.kind == shared {
		s.routeSharedLocked(m, &env)
		return
	}
	st := s.relatedLocked(m, &env)
	if st == nil {
		st = s.fallbackLocked()
	}
	if st == nil {
		s.log.Warn("a server message has no stream left to carry it: the request it belonged to is answered", "method", env.Method)
		return
	}
	if env.isRequest() {
		s.sentOn[idKey(env.ID)] = st
	}
	s.queueLocked(st, m, false)
}

// respondLocked queues a response on the stream awaiting it.
func (s *session) respondLocked(m json.RawMessage, env *envelope) {
	k := idKey(env.ID)
	st := s.byRequest[k]
	if st == nil {
		s.log.Warn("a response for a request no stream awaits was not sent (answered already, or never asked on this session)", "id", k)
		return
	}
	delete(s.byRequest, k)
	delete(st.awaiting, k)
	if s.kind == shared {
		// The client gets the response under its own id.
		m, env = s.restoreResponseLocked(st, m, env)
	}
	if k == s.initID && env.Result != nil && env.Result.ProtocolVersion != "" {
		s.version = env.Result.ProtocolVersion
	}
	if st.listsTools && env.Result != nil {
		s.srv.tools.learn(m)
	}
	if (s.kind == oneShot || s.kind == shared) && env.Result != nil && env.Result.ResultType == string(mcp.ResultTypeInputRequired) {
		m = s.wrapStateLocked(st, m, env)
	}
	s.queueLocked(st, m, true)
	if len(st.awaiting) == 0 && st.kind == postStream {
		st.finished = true
		for tk, ts := range s.byToken {
			if ts == st {
				delete(s.byToken, tk)
			}
		}
		for rk, rs := range s.sentOn {
			if rs == st {
				delete(s.sentOn, rk) // its cancellation has no stream left
			}
		}
		if s.kind != shared { // a shared session's streams cannot be resumed: detach forgets them
			s.finished = append(s.finished, st)
			s.trimFinishedLocked()
		}
		if s.kind == oneShot && len(s.byRequest) == 0 && len(s.rounds) == 0 {
			s.cancel() // the one-shot session's work is done
		}
	}
}

// relatedLocked returns the open stream a request or notification
// relates to, or nil.
func (s *session) relatedLocked(m json.RawMessage, env *envelope) *stream {
	var st *stream
	switch {
	case env.Method == string(mcp.MethodNotificationProgress):
		if len(env.Params.ProgressToken) > 0 {
			st = s.byToken[idKey(env.Params.ProgressToken)]
		}
	case env.Method == string(mcp.MethodNotificationCancelled) && len(env.Params.RequestID) > 0:
		st = s.sentOn[idKey(env.Params.RequestID)]
		delete(s.sentOn, idKey(env.Params.RequestID))
	}
	if st == nil && len(s.relations) > 0 {
		h := maphash.Bytes(s.seed, m)
		if k, ok := s.relations[h]; ok {
			delete(s.relations, h)
			st = s.byRequest[k]
		}
	}
	if st != nil && !st.open() {
		return nil
	}
	return st
}

// fallbackLocked is the stream for a message that relates to no open
// request: the standing stream, made when first needed, or for a one-shot
// session its open request's stream.
func (s *session) fallbackLocked() *stream {
	if s.kind == oneShot {
		for _, st := range s.streams {
			if st.open() {
				return st
			}
		}
		return nil
	}
	if s.standing == nil {
		s.standing = s.newStreamLocked(getStream)
		if s.kind == legacySSE {
			s.standing.kind = legacyStream
			s.standing.resumable = false
		}
	}
	return s.standing
}

// newStreamLocked makes a stream of kind and registers it.
func (s *session) newStreamLocked(kind streamKind) *stream {
	s.nStreams++
	prefix := "p"
	if kind != postStream {
		prefix = "g"
	}
	st := newStream(prefix+strconv.Itoa(s.nStreams), kind, s.kind == stateful)
	if s.closed {
		st.finished = true
	}
	s.streams[st.id] = st
	return st
}

// queueLocked adds a message to a stream and wakes its connection.
func (s *session) queueLocked(st *stream, m []byte, response bool) {
	if st.orphan {
		return // orphanLocked warned
	}
	ev := &event{seq: st.next, data: m, response: response}
	st.next++
	st.events = append(st.events, ev)
	st.pending += len(m)
	if st.backlog == 0 {
		st.backlogFirst = len(m)
	}
	st.backlog += len(m)
	if st.mode == modeUndecided && !response {
		st.mode = modeSSE
	}
	s.trimLocked(st)
	if st.attached && st.mode == modeSSE && st.backlog-st.backlogFirst > s.srv.opts.StreamBuffered {
		s.closeUnreadLocked(st)
	}
	st.wake()
}

// closeUnreadLocked closes the connection of an event stream whose client
// does not read it: more than StreamBuffered bytes queued behind what
// its connection is writing (beside one message of any size, which
// always passes). What waits is kept, within the session's bounds, so
// the client resumes with Last-Event-ID; a legacy or one-shot stream
// cannot be resumed, so its session ends.
func (s *session) closeUnreadLocked(st *stream) {
	limit, waiting := s.srv.opts.StreamBuffered, st.backlog
	if s.kind == shared {
		// Other requests share the session: this one alone ends.
		s.log.Warn("cancelling a request whose client does not read its stream", "stream", st.id, "waiting_bytes", waiting, "limit", limit)
		st.unhook()
		s.cancelSharedLocked(st, fmt.Sprintf("the client did not read the request's event stream: %d bytes of server messages waited for it (limit %d)", waiting, limit))
		return
	}
	if st.kind == legacyStream || s.kind == oneShot {
		if s.reason == "" {
			s.reason = fmt.Sprintf("the client did not read its event stream: %d bytes of server messages waited for it (limit %d)", waiting, limit)
		}
		s.log.Warn("ending the session: its client does not read its stream", "stream", st.id, "waiting_bytes", waiting, "limit", limit)
		s.cancel()
	} else {
		s.log.Warn("closing a stream its client does not read; the client may resume it with Last-Event-ID", "stream", st.id, "waiting_bytes", waiting, "limit", limit)
	}
	st.unhook()
}

// trimLocked drops a stream's oldest delivered events beyond the
// resumption window. Undelivered events are never dropped: the
// session's byte bound ends the session first.
func (s *session) trimLocked(st *stream) {
	limit := s.srv.opts.ResumeEvents
	n := 0
	for len(st.events)-n > limit && st.events[n].delivered {
		s.retained -= len(st.events[n].data)
		n++
	}
	if n > 0 {
		st.events = append(st.events[:0:0], st.events[n:]...)
	}
}

// trimRetainedLocked keeps the carried events kept for resumption within
// MaxBuffered bytes, dropping the oldest streams' oldest events first.
func (s *session) trimRetainedLocked() {
	for _, st := range s.finished {
		for s.retained > s.srv.opts.MaxBuffered && len(st.events) > 0 && st.events[0].delivered {
			s.retained -= len(st.events[0].data)
			st.events = st.events[1:]
		}
	}
	for _, st := range s.streams {
		for s.retained > s.srv.opts.MaxBuffered && len(st.events) > 0 && st.events[0].delivered {
			s.retained -= len(st.events[0].data)
			st.events = st.events[1:]
		}
	}
}

// trimFinishedLocked forgets the oldest finished POST streams whose
// events were all delivered, beyond the resumption window.
func (s *session) trimFinishedLocked() {
	for len(s.finished) > s.srv.opts.ResumeStreams {
		old := s.finished[0]
		s.finished = s.finished[1:]
		if old.attached {
			continue // its connection is still writing it
		}
		if old.undeliveredCursor() != old.next-1 {
			// Its client dropped the stream and did not resume it while
			// the session answered ResumeStreams more requests.
			s.orphanLocked(old)
		}
		s.retained -= retainedBytes(old)
		delete(s.streams, old.id)
	}
}

// retainedBytes is the bytes of a stream's carried events kept.
func retainedBytes(st *stream) int {
	n := 0
	for _, ev := range st.events {
		if ev.delivered {
			n += len(ev.data)
		}
	}
	return n
}

// delivered marks the events a connection wrote.
func (s *session) delivered(st *stream, evs []*event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, kept := s.streams[st.id]; !kept && s.kind == shared {
		for _, ev := range evs {
			ev.delivered = true // a forgotten stream counts nothing
		}
		return
	}
	for _, ev := range evs {
		if !ev.delivered {
			ev.delivered = true
			st.pending -= len(ev.data)
			s.retained += len(ev.data)
		}
	}
	s.trimLocked(st)
	if s.retained > s.srv.opts.MaxBuffered {
		s.trimRetainedLocked()
	}
}

// errSessionEnded is returned to a handler whose session ended.
var errSessionEnded = errors.New("the MCP session ended")

// submit hands one client message (or batch) to the proxy, in the order
// handlers call it.
func (s *session) submit(ctx context.Context, body []byte) error {
	s.mu.Lock()
	s.touchLocked()
	s.mu.Unlock()
	select {
	case s.in <- body:
		return nil
	case <-s.ctx.Done():
		return errSessionEnded
	case <-ctx.Done():
		return ctx.Err()
	}
}

// armIdle starts the idle timer.
func (s *session) armIdle() {
	d := s.srv.opts.SessionIdle
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastActive = time.Now()
	s.idle = time.AfterFunc(d, s.checkIdle)
}

// checkIdle ends the session when nothing happened for SessionIdle and no
// request is in flight; otherwise it looks again when that could be true.
func (s *session) checkIdle() {
	d := s.srv.opts.SessionIdle
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := time.Now()
	if len(s.byRequest) > 0 {
		s.lastActive = now
	}
	if wait := s.lastActive.Add(d).Sub(now); wait > 0 {
		s.idle.Reset(wait)
		return
	}
	if s.reason == "" {
		s.reason = fmt.Sprintf("idle for %s (--session-idle)", d)
	}
	s.log.Info("ending an idle MCP session", "idle", d.String())
	s.cancel()
}

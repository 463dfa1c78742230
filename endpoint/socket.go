package endpoint

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

const (
	// writeWait bounds every frame written.
	writeWait = 10 * time.Second
	// socketQueue bounds the events the subscriptions of one connection
	// have handed to its writer, and, separately, the frames it answers
	// its peer's requests with.
	socketQueue = 1024
	// pingEvery and pongWait are the liveness rules (AEP-0003 §3.5 rule 5,
	// with WebSocket pings, which every client answers): a peer that has
	// sent nothing, not even a pong, for pongWait is gone, and what it
	// wrote is released.
	pingEvery = 30 * time.Second
	pongWait  = 90 * time.Second
)

var upgrader = websocket.Upgrader{
	// The endpoint's guard (guard.go) has already refused a foreign Origin
	// before the upgrade, and it allows the --allow-origin list that the
	// upgrader's own same-host check would refuse.
	CheckOrigin: func(r *http.Request) bool { return true },
}

// socket is one WebSocket connection (AEP-0003 §3.5).
//
// Its writer sends two queues: ctrl, the frames the connection answers its
// peer with (hello, subscribed, errors, pongs, rosters, and commands routed
// to an emitter), and out, the events its subscriptions deliver. ctrl goes
// first, so a reply never waits behind a replay and a replay never makes a
// reply overflow; subscriptions wait for room in out, and their own live
// queues in the hub decide when a consumer is too slow.
type socket struct {
	e    *Endpoint
	conn *websocket.Conn
	ctrl chan []byte
	out  chan []byte
	// bye carries the reason of an orderly close to the writer, which
	// first lets every subscription deliver what it already holds, then
	// sends the frames queued and a closing frame, then closes.
	bye       chan string
	done      chan struct{}
	wg        sync.WaitGroup // the writer and the forwarders
	fwg       sync.WaitGroup // the forwarders alone
	closeOnce sync.Once

	// helloBy is when hello is due: the handshake deadline.
	helloBy time.Time
	// flood and warned belong to the reader goroutine.
	flood  bucket
	warned time.Time
	// auth is the connection in the endpoint's authority: who it is,
	// what it writes.
	auth *authority.Conn[*socket]

	// mu guards the fields below.
	mu       sync.Mutex
	hello    bool
	role     string
	agent    string
	instance string
	accepts  []string
	control  json.RawMessage
	emits    []string
	// senders is set when the peer's hello advertised sender frames
	// (aep.SendersCapability): commands routed to it are attributed.
	senders bool
	subs    map[string]*socketSub
	// draining is set once the writer started its orderly close: no
	// subscription (and no forwarder) is added after it.
	draining bool
}

func (e *Endpoint) serveSocket(w http.ResponseWriter, r *http.Request) {
	helloBy := time.Now().Add(e.opts.handshakeWait)
	if !streamReady(w, r, true, helloBy) {
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader already answered
	}
	var op *identity.Operator
	if o, ok := operatorOf(r); ok {
		op = &o
	}
	e.runSocket(conn, principalOf(r), op, helloBy)
}

// runSocket serves an upgraded connection of principal p, from its hello,
// due by helloBy, to its close: one from /socket, whose peer presented the
// token or an operator's credential, or one from /join, whose peer proved
// it. op is the named operator p is, or nil: its connection is closed
// when its access is revoked, changed or expires.
func (e *Endpoint) runSocket(conn *websocket.Conn, p authority.Principal, op *identity.Operator, helloBy time.Time) {
	conn.SetReadLimit(e.opts.MaxEvent)
	s := &socket{e: e, conn: conn, ctrl: make(chan []byte, e.opts.queue), out: make(chan []byte, e.opts.queue),
		bye: make(chan string, 1), done: make(chan struct{}), subs: map[string]*socketSub{}, helloBy: helloBy}
	s.auth = e.access.Connect(p, s)
	if !e.enter() {
		conn.Close()
		return
	}
	defer e.active.Done()
	e.mu.Lock()
	e.conns[s] = struct{}{}
	e.mu.Unlock()
	s.wg.Add(1)
	go s.writeLoop()
	if op != nil {
		untrack, ok := e.track(*op, s.shutdown)
		if !ok {
			s.shutdown(fmt.Sprintf("operator %q: access revoked or changed", op.Name))
		} else {
			defer untrack()
		}
	}
	s.readLoop()
	// Nothing more can come from the peer: what it wrote is released at
	// once, so its reconnection is not refused while this one drains.
	e.access.Disconnect(s.auth)
	e.relayGone(s)
	if e.opts.afterRelease != nil {
		e.opts.afterRelease()
	}
	// The writer sends what is queued and a closing frame (unless one is
	// already on its way), then closes; every goroutine ends with it.
	s.shutdown("the connection ended")
	s.wg.Wait()
	e.mu.Lock()
	delete(e.conns, s)
	e.mu.Unlock()
}

// send queues a frame (any frame struct) or a command's bytes on the
// connection's reply queue. It drops nothing silently: a peer that sends
// requests without reading the answers until the queue is full is closed
// with a reason (AEP-0003 §8.4).
func (s *socket) send(v any) {
	b, ok := v.([]byte)
	if !ok {
		b = aep.EncodeFrame(v)
	}
	select {
	case s.ctrl <- b:
	case <-s.done:
	default:
		s.shutdown(fmt.Sprintf("the peer is not reading: %d answers to its requests are waiting; reconnect and resume from the last position seen", cap(s.ctrl)))
	}
}

func (s *socket) errorFrame(id, cause, code, detail string) {
	s.send(aep.NewError(id, cause, code, detail))
}

func (s *socket) write(b []byte) error {
	s.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return s.conn.WriteMessage(websocket.TextMessage, b)
}

// writeOrClose writes b, or closes the connection when it cannot.
func (s *socket) writeOrClose(b []byte) bool {
	if err := s.write(b); err != nil {
		s.close()
		return false
	}
	return true
}

// flushCtrl writes every reply queued now. An event taken from out is
// written after it: a subscription's subscribed and replay-exhausted frames
// are queued before its first event, so they always precede it.
func (s *socket) flushCtrl() bool {
	for {
		select {
		case b := <-s.ctrl:
			if !s.writeOrClose(b) {
				return false
			}
		default:
			return true
		}
	}
}

func (s *socket) writeLoop() {
	defer s.wg.Done()
	ping := time.NewTicker(s.e.opts.pingEvery)
	defer ping.Stop()
	for {
		if !s.flushCtrl() {
			return
		}
		select {
		case b := <-s.ctrl:
			if !s.writeOrClose(b) {
				return
			}
		case b := <-s.out:
			if !s.flushCtrl() || !s.writeOrClose(b) {
				return
			}
		case <-ping.C:
			if s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				s.close()
				return
			}
		case reason := <-s.bye:
			s.drain()
			s.write(s.closingFrame(reason))
			s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			s.close()
			return
		case <-s.done:
			return
		}
	}
}

// shutdown closes the connection in order (AEP-0003 §3.5 rule 4): what
// the subscriptions hold and the frames already queued (an error frame
// saying why) are sent, then a closing frame with the delivered positions.
func (s *socket) shutdown(reason string) {
	select {
	case s.bye <- reason:
	default: // already closing
	}
}

// drain ends the subscriptions and writes everything they and the queues
// hold. It runs on the writer.
func (s *socket) drain() {
	s.mu.Lock()
	s.draining = true
	for _, sub := range s.subs {
		sub.sub.Close() // what is buffered stays readable
	}
	s.mu.Unlock()
	forwarded := make(chan struct{})
	go closeWhenDone(&s.fwg, forwarded)
	for {
		select {
		case b := <-s.ctrl:
			s.writeOrClose(b) // a failure ends the forwarders with done
		case b := <-s.out:
			if s.flushCtrl() {
				s.writeOrClose(b)
			}
		case <-forwarded:
			if s.flushCtrl() {
				for len(s.out) > 0 && s.writeOrClose(<-s.out) {
				}
			}
			return
		}
	}
}

// closingFrame reports each subscription's last delivered positions.
func (s *socket) closingFrame(reason string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var delivered []aep.Delivered
	for id, sub := range s.subs {
		for _, p := range sub.last {
			delivered = append(delivered, aep.Delivered{Sub: id, Session: p.Session, Epoch: p.Epoch, Seq: p.Seq})
		}
	}
	return aep.EncodeFrame(aep.NewClosing(reason, delivered))
}

func (s *socket) close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.conn.Close()
		s.mu.Lock()
		for _, sub := range s.subs {
			sub.sub.Close()
		}
		s.mu.Unlock()
	})
}

package endpoint

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

const (
	writeWait   = 10 * time.Second
	socketQueue = 1024
)

var upgrader = websocket.Upgrader{
	// The endpoint's guard (guard.go) has already refused a foreign Origin
	// before the upgrade, and it allows the --allow-origin list that the
	// upgrader's own same-host check would refuse.
	CheckOrigin: func(r *http.Request) bool { return true },
}

// socket is one WebSocket connection (AEP-0003 §3.5).
type socket struct {
	e    *Endpoint
	conn *websocket.Conn
	out  chan []byte
	// bye carries the reason of an orderly close to the writer, which
	// first lets every subscription deliver what it already holds, then
	// sends the frames queued and a closing frame, then closes.
	bye       chan string
	done      chan struct{}
	wg        sync.WaitGroup // the writer and the forwarders
	fwg       sync.WaitGroup // the forwarders alone
	closeOnce sync.Once

	// mu guards the fields below.
	mu       sync.Mutex
	hello    bool
	role     string
	agent    string
	instance string
	accepts  []string
	control  json.RawMessage
	emits    []string
	subs     map[string]*socketSub
	// draining is set once the writer started its orderly close: no
	// subscription (and no forwarder) is added after it.
	draining bool
}

func (e *Endpoint) serveSocket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader already answered
	}
	e.runSocket(conn)
}

// runSocket serves an upgraded connection, from its hello to its close:
// one from /socket, or one from /join whose peer proved the token.
func (e *Endpoint) runSocket(conn *websocket.Conn) {
	conn.SetReadLimit(e.opts.MaxBody)
	s := &socket{e: e, conn: conn, out: make(chan []byte, socketQueue), bye: make(chan string, 1),
		done: make(chan struct{}), subs: map[string]*socketSub{}}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		conn.Close()
		return
	}
	e.conns[s] = struct{}{}
	e.mu.Unlock()
	s.wg.Add(1)
	go s.writeLoop()
	s.readLoop()
	// The writer sends what is queued and a closing frame (unless one is
	// already on its way), then closes; every goroutine ends with it.
	s.shutdown("the connection ended")
	s.wg.Wait()
	e.dropClaims(s)
	e.mu.Lock()
	delete(e.conns, s)
	e.mu.Unlock()
}

// send queues a frame (any frame struct) or an event's bytes. It drops
// nothing silently: a connection whose queue is full is closed with a
// reason (AEP-0003 §8.4).
func (s *socket) send(v any) {
	b, ok := v.([]byte)
	if !ok {
		b = aep.EncodeFrame(v)
	}
	select {
	case s.out <- b:
	case <-s.done:
	default:
		s.shutdown("the consumer is too slow: its queue is full; reconnect and resume from the last position seen")
	}
}

func (s *socket) errorFrame(id, cause, code, detail string) {
	s.send(aep.NewError(id, cause, code, detail))
}

func (s *socket) write(b []byte) error {
	s.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return s.conn.WriteMessage(websocket.TextMessage, b)
}

func (s *socket) writeLoop() {
	defer s.wg.Done()
	for {
		select {
		case b := <-s.out:
			if err := s.write(b); err != nil {
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

// drain ends the subscriptions and writes everything they and the queue
// hold. It runs on the writer.
func (s *socket) drain() {
	s.mu.Lock()
	s.draining = true
	for _, sub := range s.subs {
		sub.sub.Close() // what is buffered stays readable
	}
	s.mu.Unlock()
	forwarded := make(chan struct{})
	go func() { s.fwg.Wait(); close(forwarded) }()
	for {
		select {
		case b := <-s.out:
			if s.write(b) != nil {
				s.close() // the forwarders end with done
			}
		case <-forwarded:
			for {
				select {
				case b := <-s.out:
					s.write(b)
				default:
					return
				}
			}
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

// Flood control: each connection may send frameBurst frames at once and
// frameRate per second after that; frames beyond are refused in-band.
const (
	frameBurst = 512
	frameRate  = 256
)

// bucket is a token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) take(now time.Time) bool {
	if b.last.IsZero() {
		b.tokens, b.last = frameBurst, now
	}
	b.tokens = min(frameBurst, b.tokens+now.Sub(b.last).Seconds()*frameRate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (s *socket) readLoop() {
	var flood bucket
	var warned time.Time
	for {
		kind, data, err := s.conn.ReadMessage()
		if err != nil {
			return
		}
		if now := time.Now(); !flood.take(now) {
			if now.Sub(warned) > time.Second {
				warned = now
				var probe struct {
					ID string `json:"id"`
				}
				json.Unmarshal(data, &probe)
				s.errorFrame("", probe.ID, "limit-exceeded", fmt.Sprintf("more than %d frames per second; frames are being refused, slow down", frameRate))
			}
			continue
		}
		if kind == websocket.BinaryMessage {
			s.errorFrame("", "", "unsupported", "binary frames are reserved in AEP 0.1; send JSON text frames")
			continue
		}
		if !s.dispatch(data) {
			return
		}
	}
}

// dispatch handles one text frame; it returns false to end the connection.
func (s *socket) dispatch(data []byte) bool {
	f, err := aep.DecodeFrame(data)
	if err != nil {
		s.errorFrame("", "", "invalid-frame", err.Error())
		return true
	}
	s.mu.Lock()
	hello := s.hello
	s.mu.Unlock()
	if !hello {
		if f.Type != aep.FrameHello {
			s.errorFrame("", "", "hello-required", "the first frame must be hello (AEP-0003 §3.5)")
			s.shutdown("hello required")
			return false
		}
		return s.handleHello(f)
	}
	if aep.IsEventType(f.Type) {
		s.handleEvent(data)
		return true
	}
	switch f.Type {
	case aep.FrameSubscribe:
		s.subscribe(f)
	case aep.FrameUnsubscribe:
		s.unsubscribe(f.ID)
	case aep.FramePing:
		s.send(aep.Ping{Type: aep.FramePong, T: f.T})
	case aep.FrameRoster:
		s.roster(f.ID)
	case aep.FrameClosing:
		return false
	default:
		// Unknown frame types are ignored (AEP-0003 §2).
	}
	return true
}

func (s *socket) handleHello(f aep.Frame) bool {
	if !slices.Contains(f.Versions, aep.Version) {
		s.send(aep.ErrorFrame{Type: aep.FrameError, Code: "version-unsupported", Versions: []string{aep.Version},
			Detail: "this endpoint speaks AEP " + aep.Version})
		s.shutdown("version unsupported")
		return false
	}
	s.mu.Lock()
	s.hello, s.role = true, f.Role
	s.agent, s.instance, s.emits = f.Identity.Agent, f.Identity.Instance, f.Capabilities.Emits
	if c := f.Capabilities.Control; len(c) > 0 && string(c) != "null" {
		s.control = c
		s.accepts = f.Capabilities.Accepts()
	}
	s.mu.Unlock()
	s.send(aep.NewHello(aep.RoleBoth, aep.Identity{Agent: s.e.opts.Agent}, s.e.capabilities()))
	return true
}

// handleEvent takes an event sent on the connection: a command is routed
// to the session that owns it; anything else is ingested.
func (s *socket) handleEvent(data []byte) {
	ev, err := aep.Parse(data)
	if err != nil {
		var probe struct {
			ID string `json:"id"`
		}
		json.Unmarshal(data, &probe)
		s.errorFrame("", probe.ID, "invalid-event", err.Error())
		return
	}
	if !aep.IsCommand(ev.Type) {
		s.mu.Lock()
		emitter := s.role == aep.RoleEmitter || s.role == aep.RoleBoth
		s.mu.Unlock()
		if emitter && ev.Session != "" && ev.Seq != nil {
			// An emitter owns the sessions it sequences: commands for
			// them are routed to this connection.
			s.e.claimFor(s, ev.Session)
		}
		s.e.opts.Hub.Write(*ev, data)
		return
	}
	s.command(ev, data)
}

// command routes a command to the one session that claims it (AEP-0004 §4).
func (s *socket) command(ev *aep.Event, data []byte) {
	claim, code := s.e.route(ev.Session)
	if code != "" {
		// AEP-0004 §4.2: a connection-scoped refusal; it never enters
		// the session's history.
		detail := fmt.Sprintf("no connected emitter owns session %q", ev.Session)
		if code == "ambiguous" {
			detail = fmt.Sprintf("more than one live emitter claims session %q; the command was not delivered", ev.Session)
		}
		s.errorFrame("", ev.ID, code, detail)
		return
	}
	if !slices.Contains(claim.Accepts, ev.Type) {
		s.errorFrame("", ev.ID, "unsupported", fmt.Sprintf("session %q accepts %v, not %s", ev.Session, claim.Accepts, ev.Type))
		return
	}
	var code2, detail2 string
	if rt, ok := claim.Target.(RawTarget); ok {
		code2, detail2 = rt.SubmitRaw(data)
	} else {
		code2, detail2 = claim.Target.Submit(*ev, true)
	}
	if code2 != "" {
		s.errorFrame("", ev.ID, code2, detail2)
	}
}

func (s *socket) roster(id string) {
	if id == "" {
		s.errorFrame("", "", "invalid-filter", "roster needs an id")
		return
	}
	s.mu.Lock()
	role := s.role
	s.mu.Unlock()
	if role == aep.RoleEmitter {
		s.errorFrame(id, "", "unauthorized", "roster is answered on consumer connections only")
		return
	}
	s.send(aep.Roster{Type: aep.FrameRoster, ID: id, Entries: s.e.rosterEntries()})
}

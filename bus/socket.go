package bus

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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
	// The bearer token, not the Origin, authenticates a connection; the
	// inbox is served from this endpoint and browsers send their origin.
	CheckOrigin: func(r *http.Request) bool { return true },
}

// socket is one WebSocket connection (AEP-0003 §3.5).
type socket struct {
	e    *Endpoint
	conn *websocket.Conn
	out  chan []byte
	// bye carries the closing frame to the writer, which sends it after
	// every frame already queued, then closes.
	bye  chan []byte
	done chan struct{}
	wg   sync.WaitGroup

	// mu guards the fields below.
	mu        sync.Mutex
	hello     bool
	role      string
	agent     string
	instance  string
	accepts   []string
	control   json.RawMessage
	emits     []string
	subs      map[string]*socketSub
	closeOnce sync.Once
}

type socketSub struct {
	id      string
	sub     *Subscription
	ceiling aep.Capture
	// last holds the last delivered position per session, for closing.
	last map[string]Position
}

func (e *Endpoint) serveSocket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader already answered
	}
	conn.SetReadLimit(e.opts.MaxBody)
	s := &socket{e: e, conn: conn, out: make(chan []byte, socketQueue), bye: make(chan []byte, 1), done: make(chan struct{}), subs: map[string]*socketSub{}}
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

// send queues a frame or event. It drops nothing silently: a connection
// whose queue is full is closed with a reason (AEP-0003 §8.4).
func (s *socket) send(v any) {
	var b []byte
	switch t := v.(type) {
	case []byte:
		b = t
	default:
		b, _ = json.Marshal(v)
	}
	select {
	case s.out <- b:
	case <-s.done:
	default:
		s.shutdown("the consumer is too slow: its queue is full; reconnect and resume from the last position seen")
	}
}

func (s *socket) errorFrame(id, cause, code, detail string) {
	f := map[string]string{"type": "error", "code": code, "detail": detail}
	if id != "" {
		f["id"] = id
	}
	if cause != "" {
		f["cause"] = cause
	}
	s.send(f)
}

func (s *socket) writeLoop() {
	defer s.wg.Done()
	write := func(b []byte) error {
		s.conn.SetWriteDeadline(time.Now().Add(writeWait))
		return s.conn.WriteMessage(websocket.TextMessage, b)
	}
	for {
		select {
		case b := <-s.out:
			if err := write(b); err != nil {
				s.close()
				return
			}
		case b := <-s.bye:
			// Frames already queued (an error frame saying why) go first.
			for drained := false; !drained; {
				select {
				case q := <-s.out:
					write(q)
				default:
					drained = true
				}
			}
			write(b)
			s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			s.close()
			return
		case <-s.done:
			return
		}
	}
}

// shutdown sends a closing frame with the delivered positions (AEP-0003
// §3.5), then closes.
func (s *socket) shutdown(reason string) {
	s.mu.Lock()
	var delivered []map[string]any
	for id, sub := range s.subs {
		for _, p := range sub.last {
			delivered = append(delivered, map[string]any{"sub": id, "session": p.Session, "epoch": p.Epoch, "seq": p.Seq})
		}
	}
	s.mu.Unlock()
	if delivered == nil {
		delivered = []map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"type": "closing", "reason": reason, "delivered": delivered})
	select {
	case s.bye <- b:
	default: // already closing
	}
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

// frame is the part of a frame or event the socket dispatches on.
type frame struct {
	Type     string `json:"type"`
	Identity struct {
		Agent    string `json:"agent"`
		Instance string `json:"instance"`
	} `json:"identity"`
	Capabilities struct {
		Emits   []string        `json:"emits"`
		Control json.RawMessage `json:"control"`
	} `json:"capabilities"`
	ID       string          `json:"id"`
	Versions []string        `json:"versions"`
	Role     string          `json:"role"`
	Filter   json.RawMessage `json:"filter"`
	From     json.RawMessage `json:"from"`
	Capture  string          `json:"capture"`
	T        json.RawMessage `json:"t"`
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
		f, err := decodeFrame(data)
		if err != nil {
			s.errorFrame("", "", "invalid-frame", err.Error())
			continue
		}
		s.mu.Lock()
		hello := s.hello
		s.mu.Unlock()
		if !hello {
			if f.Type != "hello" {
				s.errorFrame("", "", "hello-required", "the first frame must be hello (AEP-0003 §3.5)")
				s.shutdown("hello required")
				return
			}
			if !s.handleHello(f) {
				return
			}
			continue
		}
		if strings.Contains(f.Type, ".") {
			s.handleEvent(data)
			continue
		}
		switch f.Type {
		case "subscribe":
			s.subscribe(f)
		case "unsubscribe":
			s.unsubscribe(f.ID)
		case "ping":
			pong := map[string]any{"type": "pong"}
			if f.T != nil {
				pong["t"] = f.T
			}
			s.send(pong)
		case "roster":
			s.roster(f.ID)
		case "closing":
			return
		default:
			// Unknown frame types are ignored (AEP-0003 §2).
		}
	}
}

// decodeFrame reads the dispatch fields of a text frame.
func decodeFrame(data []byte) (frame, error) {
	var f frame
	if err := json.Unmarshal(data, &f); err != nil || f.Type == "" {
		return frame{}, fmt.Errorf("a frame is a JSON object with a string type")
	}
	return f, nil
}

func (s *socket) handleHello(f frame) bool {
	ok := false
	for _, v := range f.Versions {
		ok = ok || v == aep.Version
	}
	if !ok {
		s.send(map[string]any{"type": "error", "code": "version-unsupported", "versions": []string{aep.Version},
			"detail": "this endpoint speaks AEP " + aep.Version})
		s.shutdown("version unsupported")
		return false
	}
	s.mu.Lock()
	s.hello, s.role = true, f.Role
	s.agent, s.instance, s.emits = f.Identity.Agent, f.Identity.Instance, f.Capabilities.Emits
	if len(f.Capabilities.Control) > 0 && string(f.Capabilities.Control) != "null" {
		s.control = f.Capabilities.Control
		var c struct {
			Accepts []string `json:"accepts"`
		}
		json.Unmarshal(f.Capabilities.Control, &c)
		s.accepts = c.Accepts
	}
	s.mu.Unlock()
	s.send(map[string]any{"type": "hello", "versions": []string{aep.Version}, "role": "both",
		"identity": map[string]any{"agent": s.e.opts.Agent}, "capabilities": s.e.capabilities()})
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
		emitter := s.role == "emitter" || s.role == "both"
		s.mu.Unlock()
		if emitter && ev.Session != "" && ev.Seq != nil {
			// An emitter owns the sessions it sequences: commands for
			// them are routed to this connection.
			s.e.claimFor(s, ev.Session)
		}
		s.e.opts.Hub.Write(*ev, data)
		return
	}
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
	if !contains(claim.Accepts, ev.Type) {
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// maxSubscriptions bounds the subscriptions of one connection.
const maxSubscriptions = 64

func (s *socket) subscribe(f frame) {
	if f.ID == "" {
		s.errorFrame("", "", "invalid-filter", "subscribe needs an id")
		return
	}
	filter, err := aep.ParseFilter(f.Filter)
	if err != nil {
		s.errorFrame(f.ID, "", "invalid-filter", err.Error())
		return
	}
	var ceiling aep.Capture
	if f.Capture != "" {
		if ceiling, err = aep.ParseCapture(f.Capture); err != nil {
			s.errorFrame(f.ID, "", "invalid-filter", "capture: "+err.Error())
			return
		}
	}
	from, err := parseFrom(f.From)
	if err != nil {
		code := "invalid-filter"
		if _, ok := err.(*limitError); ok {
			code = "limit-exceeded"
		}
		s.errorFrame(f.ID, "", code, err.Error())
		return
	}
	s.mu.Lock()
	if _, dup := s.subs[f.ID]; dup || len(s.subs) >= maxSubscriptions {
		s.mu.Unlock()
		if dup {
			s.errorFrame(f.ID, "", "invalid-filter", "a subscription with this id is already active")
		} else {
			s.errorFrame(f.ID, "", "limit-exceeded", fmt.Sprintf("at most %d subscriptions per connection", maxSubscriptions))
		}
		return
	}
	s.mu.Unlock()
	s.send(map[string]string{"type": "subscribed", "id": f.ID})
	sub, exhausted := s.e.opts.Hub.SubscribeFrom(filter.Match, from, DefaultQueue)
	for _, x := range exhausted {
		s.send(map[string]any{"type": "replay-exhausted", "sub": f.ID, "session": x.Session,
			"earliest": map[string]int64{"epoch": x.Earliest.Epoch, "seq": x.Earliest.Seq}})
	}
	ss := &socketSub{id: f.ID, sub: sub, ceiling: ceiling, last: map[string]Position{}}
	s.mu.Lock()
	s.subs[f.ID] = ss
	s.mu.Unlock()
	s.wg.Add(1)
	go s.forward(ss)
}

// forward moves one subscription's deliveries to the connection.
func (s *socket) forward(ss *socketSub) {
	defer s.wg.Done()
	for {
		select {
		case d, ok := <-ss.sub.C:
			if !ok {
				if err := ss.sub.Err(); err != nil {
					s.shutdown(err.Error())
				}
				return
			}
			b, err := downlevel(d, ss.ceiling)
			if err != nil {
				continue
			}
			if d.Event.Seq != nil {
				s.mu.Lock()
				ss.last[d.Event.Session] = Position{Session: d.Event.Session, Epoch: d.Event.EpochOrZero(), Seq: *d.Event.Seq}
				s.mu.Unlock()
			}
			s.send(b)
		case <-s.done:
			return
		}
	}
}

func (s *socket) unsubscribe(id string) {
	s.mu.Lock()
	ss, ok := s.subs[id]
	delete(s.subs, id)
	s.mu.Unlock()
	if ok {
		ss.sub.Close()
	}
	s.send(map[string]string{"type": "unsubscribed", "id": id})
}

func (s *socket) roster(id string) {
	if id == "" {
		s.errorFrame("", "", "invalid-filter", "roster needs an id")
		return
	}
	s.mu.Lock()
	role := s.role
	s.mu.Unlock()
	if role == "emitter" {
		s.errorFrame(id, "", "unauthorized", "roster is answered on consumer connections only")
		return
	}
	s.e.mu.Lock()
	entries := make([]map[string]any, 0, len(s.e.claims))
	for _, c := range s.e.claims {
		entry := map[string]any{"session": c.Session, "agent": c.Agent}
		if c.Instance != "" {
			entry["instance"] = c.Instance
		}
		switch {
		case c.Control != nil:
			entry["control"] = c.Control // verbatim (AEP-0003 §4.1 rule 4)
		case c.owner == nil:
			entry["control"] = map[string]any{"accepts": c.Accepts, "ack_window_ms": 10000}
		}
		if c.Emits != nil {
			entry["emits"] = c.Emits
		}
		entries = append(entries, entry)
	}
	s.e.mu.Unlock()
	s.send(map[string]any{"type": "roster", "id": id, "entries": entries})
}

// maxPositions bounds the resume positions of one request.
const maxPositions = DefaultReplaySessions

// limitError is a request over an endpoint limit (limit-exceeded).
type limitError struct{ detail string }

func (e *limitError) Error() string { return e.detail }

// parseFrom reads a subscribe or SSE from member: "all", or an array of
// {session, epoch, seq}.
func parseFrom(raw json.RawMessage) (From, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return From{}, nil
	}
	var all string
	if json.Unmarshal(raw, &all) == nil {
		if all == "all" {
			return From{All: true}, nil
		}
		return From{}, fmt.Errorf(`from is "all" or an array of {session, epoch, seq}`)
	}
	var ps []struct {
		Session *string `json:"session"`
		Epoch   *int64  `json:"epoch"`
		Seq     *int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &ps); err != nil {
		return From{}, fmt.Errorf(`from is "all" or an array of {session, epoch, seq}`)
	}
	if len(ps) > maxPositions {
		return From{}, &limitError{fmt.Sprintf("at most %d resume positions per request", maxPositions)}
	}
	var out From
	for _, p := range ps {
		if p.Session == nil || *p.Session == "" || p.Seq == nil || *p.Seq < 0 || (p.Epoch != nil && *p.Epoch < 0) {
			return From{}, fmt.Errorf("every from position needs session, a non-negative seq and epoch")
		}
		e := int64(0)
		if p.Epoch != nil {
			e = *p.Epoch
		}
		out.Positions = append(out.Positions, Position{Session: *p.Session, Epoch: e, Seq: *p.Seq})
	}
	return out, nil
}

// socketTarget forwards commands to the emitter behind a connection,
// byte-identically; its acks come back as events on that connection.
type socketTarget struct{ s *socket }

func (t socketTarget) Submit(cmd aep.Event, _ bool) (string, string) {
	b, err := json.Marshal(cmd)
	if err != nil {
		return "invalid", "the command could not be encoded"
	}
	return t.SubmitRaw(b)
}

func (t socketTarget) SubmitRaw(raw []byte) (string, string) {
	select {
	case <-t.s.done:
		return "no-route", "the emitter that owns this session has disconnected"
	default:
	}
	t.s.send(append([]byte(nil), raw...))
	return "", ""
}

package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/weburl"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Target takes the commands that arrive on a link: the bridge routes each
// to the session it addresses.
type Target interface {
	// Submit hands cmd, sent by from, to its session. It returns "" when
	// the session made its ack decision (the ack travels back as an
	// event), or a connection-scoped refusal code and detail (AEP-0004
	// §4.2).
	Submit(cmd aep.Event, from control.Sender) (code, detail string)
}

// writeWait bounds every frame written to the relay.
const writeWait = 10 * time.Second

// LinkOptions configure a Link.
type LinkOptions struct {
	// URL is the relay's socket (ws://host:port/socket); an http(s) base
	// URL is accepted and pointed at its /socket.
	URL string
	// Token is the shared token. A relay that offers the token proof
	// (package proof) is linked by proving it, and the token never crosses
	// the wire; one that does not gets it as a bearer token only over TLS
	// (wss) or on a loopback address.
	Token string
	// Key is this bridge's session key (proof.Key): a peer that offers the
	// token proof gets the key's proof with it, so the sessions certified
	// to the key stay this bridge's on that peer, across its restarts. Nil
	// proves none.
	Key *proof.Key
	// RequireProof refuses a peer that does not prove the token, whatever
	// the URL: the hub on the listen port, whose holder is unknown.
	RequireProof bool
	// PlainRemote allows a link over plain ws:// to an address off this
	// machine, to a peer that proves the token (--relay-allow-plain).
	// False refuses it: the proof authenticates the handshake only, and
	// after it the link is cleartext, readable and injectable on the path.
	// It never lets the bearer token go in clear.
	PlainRemote bool
	// Dial opens the link's connections (discovery and WebSocket); nil
	// means a net.Dialer.
	Dial DialFunc
	// Agent and Instance identify this emitter in its hello; Agent is
	// required, Instance may be "".
	Agent, Instance string
	// Accepts lists the commands this emitter accepts; nil means none.
	Accepts []string
	// Queue bounds the telemetry events the outbox holds while the relay
	// is unreachable; 0 means 4096. Events that must be delivered are
	// bounded in bytes instead (64 MiB).
	Queue int
	// MaxEvent is the largest event, in bytes, the peer takes: a larger
	// one is skipped with a logged reason rather than sent, since the
	// peer would close the link on it and a pending question would be
	// re-announced, and refused, on every reconnect. 0 means
	// bus.DefaultMaxEvent, what an endpoint of this bridge takes.
	MaxEvent int64
	// MinBackoff and MaxBackoff bound the reconnect delay (with jitter);
	// zero means 200ms and 10s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// Link connects this bridge to an AEP relay as an emitter (AEP-0003 §4):
// every event the sessions emit goes out on it (the commands they record
// stay home), commands come back on it, and it survives restarts on
// either side.
//   - Events queue in a bounded outbox until the hello exchange completes;
//     when it is full, debug/info telemetry is dropped, oldest first; events
//     that must reach the relay (bus.MustDeliver) are kept within a byte
//     bound. Every drop is counted and logged.
//   - It reconnects with exponential backoff and jitter.
//   - After every (re)connect it re-sends each still-pending
//     attention.requested with its original id (legal redelivery), so a
//     relay that restarted, or an operator who joined late, still sees it.
//
// A Link is a Sink. It is safe for concurrent use; Run owns its goroutines.
type Link struct {
	opts   LinkOptions
	log    *slog.Logger
	url    string
	to     targets
	client *http.Client
	dialer *websocket.Dialer

	// mu guards the fields below.
	mu        sync.Mutex
	proven    bool   // the peer proved the token once: never send it in clear
	resume    string // the resume secret the relay gave; never logged
	target    Target
	queue     outbox
	open      []openRequest
	connected bool
	dropped   int
	wake      chan struct{}
}

type openRequest struct {
	id  string
	raw []byte
}

// NewLink returns a link; call Run to connect.
func NewLink(o LinkOptions) (*Link, error) {
	u, err := socketURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	if o.MaxEvent <= 0 {
		o.MaxEvent = bus.DefaultMaxEvent
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 200 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	to, err := targetsOf(u)
	if err != nil {
		return nil, err
	}
	l := &Link{opts: o, log: o.Logger, url: u, to: to, client: discoveryClient(o.Dial, discoveryWait),
		dialer: &websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: o.Dial}, wake: make(chan struct{}, 1),
		queue: outbox{max: o.Queue}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.log = l.log.With("relay", weburl.Display(u))
	return l, nil
}

func socketURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// Never the URL itself: its user info, path or query may carry
		// a secret, and this error is printed.
		return "", fmt.Errorf("relay URL %s: want ws://host:port/socket or http://host:port", weburl.Display(raw))
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", fmt.Errorf("relay URL %s: the scheme must be ws, wss, http or https", weburl.Display(raw))
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/socket"
	}
	return u.String(), nil
}

// Bind sets the target commands arriving on the link go to.
func (l *Link) Bind(t Target) {
	l.mu.Lock()
	l.target = t
	l.mu.Unlock()
}

// Connected reports whether the hello exchange has completed.
func (l *Link) Connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connected
}

// Dropped returns how many events the full outbox dropped.
func (l *Link) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// Write queues an event for the relay and tracks pending questions. An
// event larger than the peer takes is skipped (see LinkOptions.MaxEvent),
// and so is a command (see sendable).
func (l *Link) Write(ev aep.Event, raw []byte) error {
	if !l.sendable(&ev, raw) {
		return nil
	}
	l.mu.Lock()
	switch ev.Type {
	case "attention.requested":
		l.open = append(l.open, openRequest{id: ev.ID, raw: raw})
	case "attention.resolved", "attention.timeout":
		for i, o := range l.open {
			if o.id == ev.Subject {
				l.open = append(l.open[:i:i], l.open[i+1:]...)
				break
			}
		}
	}
	l.enqueueLocked(raw, mustKeep(&ev))
	l.mu.Unlock()
	l.signal()
	return nil
}

// Redeliver queues a re-sent event (a recorded ack) for the relay.
func (l *Link) Redeliver(ev aep.Event, raw []byte) error {
	if !l.sendable(&ev, raw) {
		return nil
	}
	l.mu.Lock()
	l.enqueueLocked(raw, mustKeep(&ev))
	l.mu.Unlock()
	l.signal()
	return nil
}

// sendable reports whether an event of the session goes to the relay.
//
// A command never does. The session records each command it receives, so
// its history shows who commanded what, and that record reaches every
// sink; but a command on an emitter's connection is, to the relay, a
// command to route (AEP-0004 §4), and the session it addresses is claimed
// by this link. Sent up, the record came straight back as a redelivery of
// the command, which the session answers by re-emitting its recorded ack
// (AEP-0004 §3): every subscriber of the relay got each ack twice, and the
// record counted against this connection's command rate. The relay that
// routed the command is the one that keeps it in the history it serves
// (AEP-0004 §4.4); and the command's source is its sender's, not this
// emitter's.
func (l *Link) sendable(ev *aep.Event, raw []byte) bool {
	return !aep.IsCommand(ev.Type) && !l.tooLarge(ev, raw)
}

// tooLarge reports whether raw is larger than the peer takes, and logs
// that it is skipped: its type, id and size, never its content.
func (l *Link) tooLarge(ev *aep.Event, raw []byte) bool {
	if int64(len(raw)) <= l.opts.MaxEvent {
		return false
	}
	l.log.Warn("skipped an event larger than the relay takes; the relay would close the link on it",
		"type", ev.Type, "id", ev.ID, "bytes", len(raw), "max_bytes", l.opts.MaxEvent)
	return true
}

func (l *Link) enqueueLocked(raw []byte, keep bool) {
	dropped, wasKept := l.queue.push(raw, keep)
	if dropped == nil {
		return
	}
	l.dropped++
	if wasKept {
		l.log.Error("relay outbox over its byte bound while the relay is unreachable; dropped an event that must be delivered",
			"bytes", len(dropped), "dropped_total", l.dropped)
		return
	}
	l.log.Warn("relay outbox full; dropped a telemetry event", "dropped_total", l.dropped)
}

func (l *Link) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run connects and reconnects until ctx ends.
func (l *Link) Run(ctx context.Context) {
	backoff := l.opts.MinBackoff
	for ctx.Err() == nil {
		err := l.session(ctx)
		l.mu.Lock()
		l.connected = false
		l.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errConnected) {
			backoff = l.opts.MinBackoff
		}
		if IsRefusal(err) {
			l.log.Error("relay link refused; nothing was sent", "err", err, "retry_in", backoff.String())
		} else {
			l.log.Warn("relay link down; reconnecting", "err", err, "in", backoff.String())
		}
		jitter := time.Duration(rand.Int64N(int64(backoff)/2 + 1))
		select {
		case <-time.After(backoff/2 + jitter):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, l.opts.MaxBackoff)
	}
}

// errConnected marks a session that got past hello, so backoff restarts.
var errConnected = errors.New("the connection dropped")

// session runs one connection: the handshake, the re-announcement of
// pending questions, then the pump.
func (l *Link) session(ctx context.Context) error {
	conn, err := l.handshake(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	l.mu.Lock()
	l.connected = true
	// Re-announce pending questions first, with their original ids.
	resend := make([][]byte, 0, len(l.open))
	for _, o := range l.open {
		resend = append(resend, o.raw)
	}
	l.mu.Unlock()
	l.log.Info("relay link up", "reannounced", len(resend))
	w := &linkWriter{conn: conn.Conn}
	for _, raw := range resend {
		if err := w.write(raw); err != nil {
			return fmt.Errorf("%w: %v", errConnected, err)
		}
	}
	r := &linkReader{done: make(chan struct{})}
	go l.read(conn, w, r)
	err = l.pump(ctx, w, r)
	conn.Close()
	<-r.done
	return err
}

// linkReader is the state of a connection's reader goroutine: done closes
// when it ends, and err says why.
type linkReader struct {
	done chan struct{}
	err  error
}

// read is the reader goroutine of one connection; it ends when the
// connection does.
func (l *Link) read(conn *linkConn, w *linkWriter, r *linkReader) {
	defer close(r.done)
	r.err = l.readLoop(conn, w.write)
}

// handshake opens a connection to the relay and exchanges hello frames
// (AEP-0003 §4).
func (l *Link) handshake(ctx context.Context) (*linkConn, error) {
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	resume := l.resume
	l.mu.Unlock()
	hello := aep.EncodeFrame(aep.NewHello(aep.RoleEmitter, aep.Identity{Agent: l.opts.Agent, Instance: l.opts.Instance},
		&aep.Capabilities{Emits: []string{"session", "attention", "control", "error"}, Control: aep.NewControlCaps(l.opts.Accepts).Raw(),
			Experimental: aep.WithSenders(resumeCaps(resume))}))
	conn.SetWriteDeadline(time.Now().Add(writeWait))
	if err := conn.WriteMessage(websocket.TextMessage, hello); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sending hello: %w", err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := conn.ReadMessage()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("waiting for the relay's hello: %w", err)
	}
	reply, err := aep.DecodeFrame(b)
	if err != nil || reply.Type != aep.FrameHello {
		conn.Close()
		return nil, fmt.Errorf("the relay answered hello with %s", shorten(strings.TrimSpace(string(b))))
	}
	if secret := resumeSecretOf(reply.Capabilities); secret != "" {
		l.mu.Lock()
		l.resume = secret
		l.mu.Unlock()
	}
	conn.SetReadDeadline(time.Time{})
	return &linkConn{Conn: conn, senders: aep.AdvertisesSenders(reply.Capabilities.Experimental)}, nil
}

// linkConn is a connection to the relay past hello. senders is set when
// the relay's hello advertised sender frames: it says who sent every
// command it routes here, and a command it does not attribute is refused.
type linkConn struct {
	*websocket.Conn
	senders bool
}

// resumeCaps is the experimental capabilities of the link's hello: the
// resume secret the relay gave on an earlier connection, if any, so the
// sessions this link left with questions open come back to it.
func resumeCaps(secret string) json.RawMessage {
	if secret == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{aep.ResumeSecretCapability: secret}) // a string map always encodes
	return b
}

// resumeSecretOf returns the resume secret a relay's hello gives, or "".
func resumeSecretOf(c aep.Capabilities) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(c.Experimental, &members) != nil {
		return ""
	}
	var secret string
	if json.Unmarshal(members[aep.ResumeSecretCapability], &secret) != nil || len(secret) > 256 {
		return ""
	}
	return secret
}

// linkWriter serializes frames to the relay, each with its own deadline.
type linkWriter struct {
	conn *websocket.Conn

	// mu serializes writes: the pump and the reader's replies share conn.
	mu sync.Mutex
}

func (w *linkWriter) write(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return w.conn.WriteMessage(websocket.TextMessage, b)
}

// pump sends the outbox until the connection fails or ctx ends; then the
// last events (session.ended) go out before a closing frame.
func (l *Link) pump(ctx context.Context, w *linkWriter, r *linkReader) error {
	for {
		l.mu.Lock()
		batch := l.queue.take()
		l.mu.Unlock()
		for i, it := range batch {
			if err := w.write(it.raw); err != nil {
				l.mu.Lock()
				l.queue.requeue(batch[i:])
				l.mu.Unlock()
				return fmt.Errorf("%w: %v", errConnected, err)
			}
		}
		select {
		case <-l.wake:
		case <-r.done:
			return fmt.Errorf("%w: %v", errConnected, r.err)
		case <-ctx.Done():
			l.mu.Lock()
			rest := l.queue.take()
			l.mu.Unlock()
			for _, it := range rest {
				if w.write(it.raw) != nil {
					break
				}
			}
			w.write(aep.EncodeFrame(aep.NewClosing("the bridge is shutting down", nil)))
			w.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			return ctx.Err()
		}
	}
}

// readLoop takes commands and frames from the relay. On a relay that
// attributes commands (linkConn.senders), each command comes after the
// sender frame that names who sent it, keyed by the command's source and
// id; the session records that name as who answered. Anywhere else, a
// command's sender is the relay's token holder.
func (l *Link) readLoop(conn *linkConn, write func([]byte) error) error {
	senders := newSenders()
	for {
		kind, b, err := conn.ReadMessage()
		if err != nil {
			return err
		}
		if kind != websocket.TextMessage {
			continue
		}
		f, err := aep.DecodeFrame(b)
		if err != nil {
			continue
		}
		switch {
		case f.Type == aep.FramePing:
			write(aep.EncodeFrame(aep.Ping{Type: aep.FramePong, T: f.T}))
		case f.Type == aep.FrameClosing:
			return fmt.Errorf("the relay is closing")
		case f.Type == aep.FrameError:
			// The relay refused something this link sent: say so, or a
			// refused question would be lost without a word.
			l.log.Warn("the relay refused an event of this bridge", "event", shorten(f.Cause), "code", shorten(f.Code), "detail", shorten(f.Detail))
		case f.Type == aep.FrameSender && conn.senders:
			if s, ok := aep.DecodeSender(b); ok {
				senders.put(s)
			}
		case aep.IsEventType(f.Type):
			ev, err := aep.Parse(b)
			if err != nil || !aep.IsCommand(ev.Type) {
				continue
			}
			from := control.Sender{Authenticated: true}
			if conn.senders {
				s, ok := senders.take(ev.Source, ev.ID)
				if !ok {
					write(aep.EncodeFrame(aep.NewError("", ev.ID, "unauthorized",
						"the hub did not say who sent this command, so the session cannot record who answered; it was not applied")))
					continue
				}
				from.By, from.Groups, from.ReadOnly = s.By, s.Groups, s.ReadOnly
			}
			l.mu.Lock()
			t := l.target
			l.mu.Unlock()
			code, detail := "no-route", "this bridge has no session to take commands"
			if t != nil {
				code, detail = t.Submit(*ev, from)
			}
			if code != "" {
				write(aep.EncodeFrame(aep.NewError("", ev.ID, code, detail)))
			}
		}
	}
}

// maxSenders bounds the sender frames a connection holds for commands
// that have not arrived yet; the hub sends each just before its command.
const maxSenders = 1024

// senders are the sender frames received on one connection, keyed by the
// source and id of the command each names, oldest first.
type senders struct {
	by    map[[2]string]aep.Sender
	order [][2]string
}

func newSenders() *senders { return &senders{by: map[[2]string]aep.Sender{}} }

func (s *senders) put(f aep.Sender) {
	k := [2]string{f.Source, f.Cause}
	if _, ok := s.by[k]; !ok {
		s.order = append(s.order, k)
	}
	s.by[k] = f
	for len(s.order) > maxSenders {
		delete(s.by, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *senders) take(source, id string) (aep.Sender, bool) {
	k := [2]string{source, id}
	f, ok := s.by[k]
	if ok {
		delete(s.by, k)
		i := slices.Index(s.order, k)
		s.order = slices.Delete(s.order, i, i+1)
	}
	return f, ok
}

// Package squatter is test support: a hostile HTTP and WebSocket server that
// takes a port a bridge expects to hold an AEP endpoint (its --listen port,
// or a relay's address) and records every byte it receives, so a test can
// assert that the bridge sent it neither the token nor any event.
package squatter

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Mode is how the squatter poses.
type Mode int

const (
	// Naive answers discovery with {"aep":["0.1"]} (the document a bridge
	// once trusted), accepts every WebSocket and answers hello with hello.
	Naive Mode = iota
	// Mimic also advertises the token proof and answers its challenge
	// with a made-up proof.
	Mimic
)

// Squatter is a running squatter. Its methods are safe for concurrent use.
type Squatter struct {
	// Addr is the address it holds.
	Addr string

	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	// mu guards the fields below.
	mu       sync.Mutex
	received bytes.Buffer // raw TCP bytes, then each WebSocket payload unmasked
	requests int
	changed  chan struct{}
	conns    map[net.Conn]struct{}
}

// Start holds addr ("127.0.0.1:0" for any port) until the test ends.
func Start(t testing.TB, addr string, mode Mode) *Squatter {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the squatter cannot take %s: %v", addr, err)
	}
	s := &Squatter{Addr: ln.Addr().String(), done: make(chan struct{}), changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	s.ln = &recordingListener{Listener: ln, s: s}
	s.srv = &http.Server{Handler: s.handler(mode)}
	go func() { s.srv.Serve(s.ln); close(s.done) }()
	t.Cleanup(s.Close)
	return s
}

// Close stops the squatter and every connection it holds.
func (s *Squatter) Close() {
	s.srv.Close()
	<-s.done
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

// Received returns a copy of everything received so far.
func (s *Squatter) Received() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.received.Bytes())
}

// WaitRequests blocks until the squatter has seen n HTTP requests end, or
// the limit passes; it reports whether it saw them.
func (s *Squatter) WaitRequests(n int, limit time.Duration) bool {
	return s.Await(limit, func(_ []byte, requests int) bool { return requests >= n })
}

// Await blocks until cond holds for what was received and the number of
// HTTP requests that ended, or the limit passes; it reports whether cond
// held. cond runs on every change.
func (s *Squatter) Await(limit time.Duration, cond func(received []byte, requests int) bool) bool {
	done := time.After(limit)
	for {
		s.mu.Lock()
		ok, ch := cond(s.received.Bytes(), s.requests), s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

func (s *Squatter) record(b []byte) {
	s.mu.Lock()
	s.received.Write(b)
	s.signalLocked()
	s.mu.Unlock()
}

func (s *Squatter) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Squatter) request() {
	s.mu.Lock()
	s.requests++
	s.signalLocked()
	s.mu.Unlock()
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Squatter) handler(mode Mode) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer s.request()
		if !websocket.IsWebSocketUpgrade(r) {
			doc := `{"aep":["0.1"],"role":"collector","endpoints":{"socket":"/socket"}}`
			if mode == Mimic {
				doc = `{"aep":["0.1"],"role":"collector","capabilities":{"experimental":{"token-proof":{"versions":[1]}}}}`
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Server", "squatter/1.0")
			w.Write([]byte(doc))
			return
		}
		c, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			s.record(b)
			s.answer(c, b)
		}
	})
}

// answer plays along: hello gets hello, a proof challenge a made-up proof.
func (s *Squatter) answer(c *websocket.Conn, b []byte) {
	var f struct{ Type string }
	json.Unmarshal(b, &f)
	switch f.Type {
	case "hello":
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"both","identity":{"agent":"squatter"}}`))
	case "proof-challenge":
		nonce, mac := make([]byte, 32), make([]byte, 32)
		rand.Read(nonce)
		rand.Read(mac)
		resp, _ := json.Marshal(map[string]any{"type": "proof-response", "v": 1,
			"nonce": base64.RawURLEncoding.EncodeToString(nonce), "mac": base64.RawURLEncoding.EncodeToString(mac)})
		c.WriteMessage(websocket.TextMessage, resp)
	}
}

// recordingListener records every byte read from its connections.
type recordingListener struct {
	net.Listener
	s *Squatter
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.mu.Lock()
	l.s.conns[c] = struct{}{}
	l.s.mu.Unlock()
	return &recordingConn{Conn: c, s: l.s}, nil
}

type recordingConn struct {
	net.Conn
	s *Squatter
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.s.record(b[:n])
	return n, err
}

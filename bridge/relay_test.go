package bridge

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/relay"
)

// testRelay is a bare AEP endpoint on a fixed loopback address, restartable.
type testRelay struct {
	t    *testing.T
	addr string
	ep   *endpoint.Endpoint
	srv  *http.Server
	done chan struct{}
}

func startRelay(t *testing.T, addr string) *testRelay {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.New(endpoint.Options{Token: "relay-token", Hub: bus.NewHub()})
	if err != nil {
		t.Fatal(err)
	}
	r := &testRelay{t: t, addr: ln.Addr().String(), ep: ep, srv: &http.Server{Handler: ep.Handler()}, done: make(chan struct{})}
	go func() { r.srv.Serve(ln); close(r.done) }()
	return r
}

func (r *testRelay) stop() {
	r.ep.Close()
	r.srv.Close()
	<-r.done
}

// operator is a WebSocket consumer of a relay.
type wsOperator struct {
	t    *testing.T
	c    *websocket.Conn
	last []byte
}

func connectOperator(t *testing.T, addr string) *wsOperator {
	t.Helper()
	return connectOperatorWith(t, addr, "relay-token")
}

func connectOperatorWith(t *testing.T, addr, token string) *wsOperator {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/socket?access_token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	o := &wsOperator{t: t, c: c}
	o.send(`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"operator"}}`)
	o.until(func(m map[string]any) bool { return m["type"] == "hello" })
	o.send(`{"type":"subscribe","id":"all","from":"all"}`)
	return o
}

func (o *wsOperator) send(s string) { o.c.WriteMessage(websocket.TextMessage, []byte(s)) }

// question waits for the next attention.requested that also fits more (if
// given).
func (o *wsOperator) question(more func(m map[string]any) bool) aep.Event {
	o.t.Helper()
	var req aep.Event
	b := o.until(func(m map[string]any) bool { return m["type"] == "attention.requested" && (more == nil || more(m)) })
	if err := json.Unmarshal(b, &req); err != nil {
		o.t.Fatalf("attention.requested does not decode: %v", err)
	}
	return req
}

// answer sends a control.attention.respond for req and waits for its
// control.accepted.
func (o *wsOperator) answer(req aep.Event, a aep.Answer) {
	o.t.Helper()
	cmd := command(req.Session, req.ID, a)
	raw, _ := json.Marshal(cmd)
	o.send(string(raw))
	o.until(func(m map[string]any) bool { return m["type"] == "control.accepted" && m["cause"] == cmd.ID })
}

func (o *wsOperator) until(pred func(map[string]any) bool) []byte {
	o.t.Helper()
	for {
		o.c.SetReadDeadline(time.Now().Add(waitLimit))
		_, b, err := o.c.ReadMessage()
		if err != nil {
			o.t.Fatalf("operator read: %v (last %s)", err, o.last)
		}
		o.last = b
		var m map[string]any
		json.Unmarshal(b, &m)
		if pred(m) {
			return b
		}
	}
}

func linkedSession(t *testing.T, relayAddr string) (*session, *relay.Link) {
	t.Helper()
	link, err := relay.NewLink(relay.LinkOptions{URL: "http://" + relayAddr, Token: "relay-token", Agent: "bridge-b", Instance: "test",
		Accepts: []string{"control.attention.respond"}, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := startSession(t, sessionConfig{opts: Options{Agent: "bridge-b", Sinks: []bus.Sink{link}}})
	link.Bind(s.b.Claim("test").Target)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); link.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s, link
}

// TestJoinedBridgeIsAnsweredThroughTheHub is the hub mode: bridge B links
// to the endpoint A serves; B's question shows on A, and an answer given on
// A reaches B's server through the link.
func TestJoinedBridgeIsAnsweredThroughTheHub(t *testing.T) {
	t.Parallel()
	a := startRelay(t, "127.0.0.1:0")
	defer a.stop()
	s, _ := linkedSession(t, a.addr)
	op := connectOperator(t, a.addr)
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := op.question(nil)
	if req.Agent != "bridge-b" || req.Session != s.b.Session() {
		t.Fatalf("request on the hub: agent %s session %s", req.Agent, req.Session)
	}
	op.answer(req, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	if got := elicitResult(t, s.result(call)); got["action"] != "accept" {
		t.Fatalf("B's server got %v", got)
	}
	// The hub's roster shows B's claim with its declared control block.
	op.send(`{"type":"roster","id":"r"}`)
	roster := op.until(func(m map[string]any) bool { return m["type"] == "roster" })
	if !strings.Contains(string(roster), s.b.Session()) || !strings.Contains(string(roster), "control.attention.respond") {
		t.Fatalf("roster: %s", roster)
	}
}

// TestRelayRestartReannouncesPendingQuestions stops the relay while a
// question is pending and starts it again: the link reconnects, the
// question is re-announced with its original id, and an answer given
// afterwards reaches the server.
func TestRelayRestartReannouncesPendingQuestions(t *testing.T) {
	t.Parallel()
	a := startRelay(t, "127.0.0.1:0")
	addr := a.addr
	s, link := linkedSession(t, addr)
	first := connectOperator(t, addr)
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := first.question(nil)
	a.stop()

	b := startRelay(t, addr) // a fresh relay: empty buffers, no claims
	defer b.stop()
	op := connectOperator(t, addr)
	again := op.question(nil)
	if again.ID != req.ID {
		t.Fatalf("re-announced %s; want the original id %s", again.ID, req.ID)
	}
	if !link.Connected() {
		t.Fatal("link not connected after re-announcing")
	}
	op.answer(req, aep.Answer{Option: "decline"})
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" {
		t.Fatalf("server got %v", got)
	}
}

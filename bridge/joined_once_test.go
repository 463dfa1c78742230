package bridge

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// hubConn is a consumer connection to a hub whose frames a goroutine of
// its own reads, so the test can send a burst without reading in between.
type hubConn struct {
	t      *testing.T
	c      *websocket.Conn
	frames chan []byte
	// last is the frame until returned last, as received.
	last []byte
}

// dialHub opens a consumer connection to the endpoint at addr, says hello,
// and, when subscribe is not "", sends it as a subscribe frame and waits
// for the subscribed answer.
func dialHub(t *testing.T, addr, token, subscribe string) *hubConn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/socket?access_token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &hubConn{t: t, c: c, frames: make(chan []byte, 64)}
	done := make(chan struct{})
	go h.read(done)
	t.Cleanup(func() { c.Close(); <-done })
	h.send(`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"operator"}}`)
	h.until(func(m map[string]any) bool { return m["type"] == "hello" })
	if subscribe != "" {
		h.send(subscribe)
		h.until(func(m map[string]any) bool { return m["type"] == "subscribed" })
	}
	return h
}

// read is the connection's reader goroutine; it ends when the connection
// closes.
func (h *hubConn) read(done chan struct{}) {
	defer close(done)
	defer close(h.frames)
	for {
		_, b, err := h.c.ReadMessage()
		if err != nil {
			return
		}
		h.frames <- b
	}
}

func (h *hubConn) send(s string) {
	h.t.Helper()
	h.c.SetWriteDeadline(time.Now().Add(waitLimit))
	if err := h.c.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		h.t.Fatalf("sending to the hub: %v", err)
	}
}

// until reads frames until pred holds for one, and returns it.
func (h *hubConn) until(pred func(m map[string]any) bool) map[string]any {
	h.t.Helper()
	guard := time.After(waitLimit) // a failure guard, not a synchronisation
	for {
		select {
		case b, ok := <-h.frames:
			if !ok {
				h.t.Fatal("the hub closed the connection")
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			if pred(m) {
				h.last = b
				return m
			}
		case <-guard:
			h.t.Fatalf("nothing awaited arrived within %v", waitLimit)
		}
	}
}

func (h *hubConn) command(cmd aep.Event) {
	h.t.Helper()
	raw, err := json.Marshal(cmd)
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(string(raw))
}

// isAck reports whether m is an ack event.
func isAck(m map[string]any) bool {
	return m["type"] == "control.accepted" || m["type"] == "control.rejected"
}

// TestJoinedSessionEventsReachHubSubscribersOnce runs a real hub and a real
// bridge joined to it (over /join), with a question open in the joined
// bridge's session, and sends that session a burst of commands from one
// connection, more than the connection's burst allowance. Every command gets
// exactly one reply (its ack, or a limit-exceeded error frame), and every
// event of the session reaches a passive subscriber live exactly once.
//
// A sentinel command, sent after every command of the burst got its
// first reply, bounds the wait: whatever the session emitted for the burst
// reaches the hub before the sentinel's ack does, since the hub routes the
// sentinel to the session after everything the session sent up to its
// first replies, and the session's events travel in order.
func TestJoinedSessionEventsReachHubSubscribersOnce(t *testing.T) {
	t.Parallel()
	const burst = 600 // over the endpoint's per-connection burst of 512
	a := newTestHost(t, HostOptions{Listen: "127.0.0.1:0", Token: "hub-token", Agent: "hub"})
	b := newTestHost(t, HostOptions{Listen: a.Addr(), Token: "hub-token", Agent: "joined"})
	if b.Joined() == "" {
		t.Fatal("the second host did not join the first")
	}
	s := startSession(t, sessionConfig{host: b})
	sb := s.b.Session()
	watch := connectOperatorWith(t, a.Addr(), "hub-token")
	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	q := watch.question(func(m map[string]any) bool { return m["session"] == sb })

	passive := dialHub(t, a.Addr(), "hub-token", `{"type":"subscribe","id":"p","filter":{"session":"`+sb+`"}}`)
	cmdr := dialHub(t, a.Addr(), "hub-token", `{"type":"subscribe","id":"c","filter":{"type":["control.*"]}}`)

	// Each command is nacked invalid, so the question stays open for all.
	replies := map[string]int{}
	for i := range burst {
		cmd := command(sb, q.ID, aep.Answer{Option: fmt.Sprintf("no-such-option-%d", i)})
		replies[cmd.ID] = 0
		cmdr.command(cmd)
	}
	reply := func(m map[string]any) string {
		if c, ok := m["cause"].(string); ok && (isAck(m) || m["type"] == aep.FrameError) {
			return c
		}
		return ""
	}
	for answered := 0; answered < burst; {
		c := reply(cmdr.until(func(m map[string]any) bool { _, ok := replies[reply(m)]; return ok }))
		if replies[c] == 0 {
			answered++
		}
		replies[c]++
	}

	sentinel := command(sb, q.ID, aep.Answer{Option: "sentinel"})
	dialHub(t, a.Addr(), "hub-token", "").command(sentinel)
	for {
		m := cmdr.until(func(m map[string]any) bool { return reply(m) != "" })
		c := reply(m)
		if c == sentinel.ID {
			break
		}
		if _, ok := replies[c]; !ok {
			t.Fatalf("a reply to a command never sent: %v", m)
		}
		replies[c]++
	}
	for id, n := range replies {
		if n != 1 {
			t.Errorf("command %s: got %d replies; want exactly 1", id, n)
		}
	}

	live := map[string]int{}
	for {
		m := passive.until(func(map[string]any) bool { return true })
		if isAck(m) && m["cause"] == sentinel.ID {
			break
		}
		if id, ok := m["id"].(string); ok && aep.IsEventType(fmt.Sprint(m["type"])) {
			live[id]++
		}
	}
	acks := 0
	for id, n := range live {
		if n != 1 {
			t.Errorf("event %s reached a live subscriber %d times; want once", id, n)
		}
		acks++
	}
	if acks == 0 {
		t.Fatal("the passive subscriber saw no event of the joined session")
	}
}

// TestARetriedCommandToAJoinedSessionIsAnsweredAgain: a command sent
// again with its id (a sender whose ack was lost) reaches the joined
// bridge's session through the hub, and the session's recorded ack reaches
// the sender again, byte-identically (AEP-0004 §3). The hub's live fan-out
// forwards that redelivery (AEP-0003 §5): one reply per delivery.
func TestARetriedCommandToAJoinedSessionIsAnsweredAgain(t *testing.T) {
	t.Parallel()
	a := newTestHost(t, HostOptions{Listen: "127.0.0.1:0", Token: "hub-token", Agent: "hub"})
	b := newTestHost(t, HostOptions{Listen: a.Addr(), Token: "hub-token", Agent: "joined"})
	s := startSession(t, sessionConfig{host: b})
	sb := s.b.Session()
	watch := connectOperatorWith(t, a.Addr(), "hub-token")
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	q := watch.question(func(m map[string]any) bool { return m["session"] == sb })

	cmdr := dialHub(t, a.Addr(), "hub-token", `{"type":"subscribe","id":"c","filter":{"type":["control.*"]}}`)
	cmd := command(sb, q.ID, aep.Answer{Option: "cancel"})
	answered := func(m map[string]any) bool { return m["cause"] == cmd.ID && (isAck(m) || m["type"] == aep.FrameError) }
	cmdr.command(cmd)
	if m := cmdr.until(answered); m["type"] != "control.accepted" {
		t.Fatalf("the command got %v; want control.accepted", m)
	}
	first := cmdr.last
	if got := elicitResult(t, s.result(call)); got["action"] != "cancel" {
		t.Fatalf("server got %v; want cancel", got)
	}
	cmdr.command(cmd) // the retry: same source, same id
	cmdr.until(answered)
	if string(cmdr.last) != string(first) {
		t.Fatalf("the retry got\n%s\nwant the recorded ack again, byte-identically:\n%s", cmdr.last, first)
	}

	// A sentinel bounds the wait for a third reply: the session handles
	// it after the retry, and its ack follows whatever the retry caused.
	sentinel := command(sb, q.ID, aep.Answer{Option: "cancel"})
	dialHub(t, a.Addr(), "hub-token", "").command(sentinel)
	m := cmdr.until(func(m map[string]any) bool { return answered(m) || m["cause"] == sentinel.ID })
	if m["cause"] == cmd.ID {
		t.Fatalf("the command, delivered twice, got a third reply: %v", m)
	}
}

package relay

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
)

// submits is a Target that passes on the ids of the commands it is handed.
type submits chan string

func (s submits) Submit(cmd aep.Event, _ control.Sender) (string, string) {
	s <- cmd.ID
	return "", ""
}

// respondCommand is an operator's control.attention.respond to session s.
func respondCommand(t *testing.T, id string) (aep.Event, []byte) {
	t.Helper()
	ev := aep.Event{AEP: aep.Version, ID: id, Type: "control.attention.respond", Subject: "Q1", Cause: "Q1",
		Time: "2026-01-01T00:00:01Z", Source: "aep://h/agent/operator", Agent: "operator", Session: "s",
		Capture: aep.CaptureRedacted, Data: json.RawMessage(`{"answer":{"option":"cancel"}}`)}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return ev, raw
}

// TestARecordedCommandIsNotSentToTheRelay: a session records the commands
// it receives, and its link is one of its sinks. On a real endpoint, a
// record sent up the link would be routed straight back to the session as
// a redelivery (the link claims the session), and the session would answer
// it again. The link keeps it: the first command the session is handed
// after the record is the one an operator sends afterwards.
func TestARecordedCommandIsNotSentToTheRelay(t *testing.T) {
	real := startReal(t, "127.0.0.1:0", token)
	sub := real.hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "s" }, 8)
	defer sub.Close()
	l, logs := newLink(t, LinkOptions{URL: "http://" + real.addr, Accepts: []string{"control.attention.respond"}})
	got := make(submits, 8)
	l.Bind(got)
	started, raw := event(t, "E1") // the session's first event: the endpoint routes "s" to the link
	l.Write(started, raw)
	record, recordRaw := respondCommand(t, "C1")
	if err := l.Write(record, recordRaw); err != nil {
		t.Fatalf("Write of a recorded command: %v", err)
	}
	after := started
	after.ID, after.Type, after.Seq = "E2", "session.heartbeat", aep.Int64(1)
	afterRaw, _ := json.Marshal(after)
	l.Write(after, afterRaw)
	runLink(t, l)
	awaitEvent(t, sub, "E1", logs)
	// E2 was read after the record on the same connection: had the record
	// been sent, the endpoint routed it back before E2 reached the hub.
	awaitEvent(t, sub, "E2", logs)

	c, _, err := websocket.DefaultDialer.Dial("ws://"+real.addr+"/socket?access_token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"operator"}}`))
	_, cmdRaw := respondCommand(t, "C2")
	c.WriteMessage(websocket.TextMessage, cmdRaw)
	select {
	case id := <-got:
		if id != "C2" {
			t.Fatalf("the session was handed command %s first; want C2, the operator's (the recorded C1 came back through the relay)", id)
		}
	case <-time.After(waitLimit):
		t.Fatalf("the operator's command never reached the session; log:\n%s", logs)
	}
}

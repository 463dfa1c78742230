package bridge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// TestAttentionRoundTripOverTheWire answers a real server's question from a
// WebSocket operator: hello, subscribe with replay-all, the command, its
// ack and outcome, and a redelivered command re-acked byte-identically
// (AEP-0004 §7 fixture classes: attention round-trip, dedupe-on-retry).
func TestAttentionRoundTripOverTheWire(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	base := s.serve("tok")

	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	s.next("attention.requested") // raised before the operator connects: replay must show it

	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/socket?access_token=tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func() (map[string]any, []byte) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(waitLimit))
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		return m, b
	}
	until := func(pred func(map[string]any) bool) []byte {
		t.Helper()
		for {
			if m, b := read(); pred(m) {
				return b
			}
		}
	}
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"operator"}}`))
	until(func(m map[string]any) bool { return m["type"] == "hello" })
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","id":"s","filter":{"type":["attention.*","control.*"]},"from":"all"}`))
	var req aep.Event
	json.Unmarshal(until(func(m map[string]any) bool { return m["type"] == "attention.requested" }), &req)

	cmd := command(s.b.Session(), req.ID, aep.Answer{Values: map[string]any{"environment": "production", "replicas": json.Number("2"), "confirm": true}})
	raw, _ := json.Marshal(cmd)
	c.WriteMessage(websocket.TextMessage, raw)
	isAck := func(m map[string]any) bool { return m["type"] == "control.accepted" && m["cause"] == cmd.ID }
	ack1 := until(isAck)
	until(func(m map[string]any) bool { return m["type"] == "attention.resolved" })
	got := elicitResult(t, s.result(call))
	if got["action"] != "accept" || got["content"].(map[string]any)["replicas"].(json.Number).String() != "2" {
		t.Fatalf("server got %v", got)
	}
	// A retry of the same command is answered with the recorded ack.
	c.WriteMessage(websocket.TextMessage, raw)
	ack2 := until(isAck)
	if string(ack1) != string(ack2) {
		t.Fatalf("the re-ack differs:\n%s\n%s", ack1, ack2)
	}
	// Without the token nothing is served, control included.
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/socket", nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated socket: %v", err)
	}
}

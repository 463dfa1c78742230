package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// TestRespondRetryAfterDroppedConnection drops the operator's connection
// right after it sends its command; the retry reuses the command id and is
// answered with the recorded ack, and the server gets one answer.
func TestRespondRetryAfterDroppedConnection(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	base := s.serve("tok")

	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	s.next("attention.requested")
	c := &operator.Client{Endpoint: base, Token: "tok"}
	ctx := context.Background()
	qs, err := c.Pending(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatalf("pending: %v %v", qs, err)
	}
	attempts := 0
	ack, err := c.Respond(ctx, qs[0], aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}}, waitLimit,
		func(attempt int) bool { attempts = attempt; return attempt > 1 })
	if err != nil || !ack.Accepted {
		t.Fatalf("respond: %+v %v", ack, err)
	}
	if attempts != 2 {
		t.Fatalf("%d attempts; want the first dropped and one retry", attempts)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "accept" {
		t.Fatalf("server got %v", got)
	}
	// The first delivery was decided; the retry got that ack re-sent,
	// byte for byte (AEP-0004 §3).
	first := s.next("control.accepted")
	again := s.next("control.accepted")
	if first.ID != again.ID || string(mustRaw(t, first)) != string(mustRaw(t, again)) || string(ack.Raw) != string(mustRaw(t, first)) {
		t.Fatalf("re-ack differs:\n%s\n%s\n%s", mustRaw(t, first), mustRaw(t, again), ack.Raw)
	}
	s.close()
	rep := s.checkLog()
	if rep.Types["control.accepted"] != 1 || rep.Types["attention.answered"] != 1 {
		t.Fatalf("log: %d acks, %d answers; want one decision", rep.Types["control.accepted"], rep.Types["attention.answered"])
	}
	if rep.Types["control.attention.respond"] != 1 {
		t.Fatalf("the retried command was recorded %d times; want once", rep.Types["control.attention.respond"])
	}
}

func mustRaw(t *testing.T, ev aep.Event) []byte {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

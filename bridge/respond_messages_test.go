package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// TestURLQuestionRefusesValuesOnce answers a URL question with values, as
// `respond --values` would: the rejection says "answer:" once, and the
// question's options are listed for the operator.
func TestURLQuestionRefusesValuesOnce(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	base := s.serve("tok")
	call := s.call("ask-url", map[string]any{"id": "el-9", "url": "https://auth.example.org/start"}, nil)
	s.next("attention.requested")
	c := &operator.Client{Endpoint: base, Token: "tok"}
	qs, err := c.Pending(context.Background())
	if err != nil || len(qs) != 1 {
		t.Fatalf("pending: %v %v", qs, err)
	}
	if b, _ := json.Marshal(qs[0].Options); string(b) == "null" || !strings.Contains(string(b), `"id":"accept"`) {
		t.Fatalf("the URL question lists options %s", b)
	}
	ack, err := c.Respond(context.Background(), qs[0], aep.Answer{Values: map[string]any{"x": 1}}, waitLimit, nil)
	if err != nil || ack.Accepted {
		t.Fatalf("values on a URL question: %+v %v", ack, err)
	}
	if want := "answer: a URL question takes option accept, decline or cancel, not values"; ack.Detail != want {
		t.Fatalf("detail %q; want %q", ack.Detail, want)
	}
	if ack, err := c.Respond(context.Background(), qs[0], aep.Answer{Option: "accept"}, waitLimit, nil); err != nil || !ack.Accepted {
		t.Fatalf("accept: %+v %v", ack, err)
	}
	if got := compactAny(elicitResult(t, s.result(call))); got != `{"action":"accept"}` {
		t.Fatalf("server got %s", got)
	}
}

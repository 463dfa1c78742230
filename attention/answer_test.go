package attention

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// TestURLAcceptResult: consent to a URL question reaches the server as
// {"action":"accept"} with no content (MCP 2025-11-25).
func TestURLAcceptResult(t *testing.T) {
	m := NewManager(ManagerOptions{Agent: "a", Publisher: &memPub{}, Timeout: time.Minute})
	defer m.Close()
	for _, how := range []string{"respond", "complete"} {
		got := make(chan Resolution, 1)
		id, err := m.Raise(Spec{URL: "https://example.com/auth", ElicitationID: "e-" + how, Subject: "srv",
			RespondVia: []string{"control"}, Deliver: func(r Resolution) { got <- r }})
		if err != nil {
			t.Fatal(err)
		}
		if how == "respond" {
			m.Respond(aep.Event{ID: "c", Subject: id}, aep.Answer{Option: "accept"}, "op", func(string, string) error { return nil })
		} else {
			m.Complete("e-complete")
		}
		b, _ := json.Marshal((<-got).Decision.Result())
		if string(b) != `{"action":"accept"}` {
			t.Fatalf("%s: got %s; want {\"action\":\"accept\"}", how, b)
		}
	}
}

// TestClientAnswerNumbersExact: the bus records the client's own answer
// with its numbers as written.
func TestClientAnswerNumbersExact(t *testing.T) {
	pub := &memPub{}
	m := NewManager(ManagerOptions{Agent: "a", Publisher: pub, Timeout: time.Minute})
	defer m.Close()
	id, _ := m.Raise(Spec{Form: form(t), RespondVia: []string{"control", "oob"}, Deliver: func(Resolution) {}})
	m.ClientAnswered(id, "ide", json.RawMessage(`{"action":"accept","content":{"n":9007199254740993}}`))
	for _, ev := range pub.evs {
		if ev.Type == "attention.answered" {
			if want := `{"answer":{"values":{"n":9007199254740993}},"by":"ide","via":"oob"}`; string(ev.Data) != want {
				t.Fatalf("got %s; want %s", ev.Data, want)
			}
			return
		}
	}
	t.Fatal("no attention.answered")
}

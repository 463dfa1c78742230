package relay

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// senderTarget passes on who sent each command it is handed.
type senderTarget chan control.Sender

func (s senderTarget) Submit(_ aep.Event, from control.Sender) (string, string) {
	s <- from
	return "", ""
}

// TestTheHubSaysWhoSentACommand: an operator's command, routed by the hub
// to a linked bridge's session, reaches the session as the operator's,
// with the operator's identity groups, whatever the command's agent
// claims.
func TestTheHubSaysWhoSentACommand(t *testing.T) {
	text, v, _ := identity.NewCredential(identity.KindOperator, rand.Reader)
	doc := &identity.Document{}
	doc.AddOperator(identity.Operator{Name: "alice", Can: identity.Answer, Groups: []string{"oncall", "sre"}, Credential: &v})
	real := startRealWith(t, "127.0.0.1:0", endpoint.Options{Token: token, Operators: identity.NewDirectory(doc)})
	sub := real.hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "s" }, 8)
	defer sub.Close()
	l, logs := newLink(t, LinkOptions{URL: "http://" + real.addr, Accepts: []string{"control.attention.respond"}})
	got := make(senderTarget, 8)
	l.Bind(got)
	started, raw := event(t, "E1")
	l.Write(started, raw)
	runLink(t, l)
	awaitEvent(t, sub, "E1", logs)

	for _, tc := range []struct{ credential, want, groups string }{{text, "alice", "oncall,sre"}, {token, "token holder", ""}} {
		c, _, err := websocket.DefaultDialer.Dial("ws://"+real.addr+"/socket?access_token="+tc.credential, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"mallory"}}`))
		_, cmd := respondCommand(t, "C-"+tc.want) // its agent says "operator"
		c.WriteMessage(websocket.TextMessage, cmd)
		select {
		case from := <-got:
			if from.By != tc.want || strings.Join(from.Groups, ",") != tc.groups || from.ReadOnly || !from.Authenticated {
				t.Errorf("the session was told the command came from %+v; want %s in groups %q", from, tc.want, tc.groups)
			}
		case <-time.After(waitLimit):
			t.Fatalf("the command never reached the session; log:\n%s", logs)
		}
		c.Close()
	}
}

// TestAnUnattributedCommandIsRefused: on a connection to a hub that says
// who sends commands, a command that comes without its sender frame is
// refused, not taken as the token's holder's.
func TestAnUnattributedCommandIsRefused(t *testing.T) {
	frames := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_, cmd := respondCommand(t, "C1")
		other, _ := json.Marshal(aep.NewSender(&aep.Event{ID: "C0", Source: "aep://h/agent/operator"}, "alice", nil, false))
		c.WriteMessage(websocket.TextMessage, other) // names another command
		c.WriteMessage(websocket.TextMessage, cmd)
		c.SetReadDeadline(time.Now().Add(waitLimit))
		_, b, _ := c.ReadMessage()
		frames <- b
	}))
	defer srv.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, _ := newLink(t, LinkOptions{URL: srv.URL})
	got := make(senderTarget, 1)
	l.Bind(got)
	done := make(chan error, 1)
	go func() {
		done <- l.readLoop(&linkConn{Conn: c, senders: true}, func(b []byte) error { return c.WriteMessage(websocket.TextMessage, b) })
	}()
	f, _ := aep.DecodeFrame(<-frames)
	if f.Type != "error" || f.Code != "unauthorized" || f.Cause != "C1" || len(got) != 0 {
		t.Fatalf("got %+v, %d submitted; want an unauthorized error naming C1 and nothing submitted", f, len(got))
	}
	c.Close()
	<-done
}

func TestSendersAreBounded(t *testing.T) {
	s := newSenders()
	for i := range maxSenders + 10 {
		s.put(aep.Sender{Type: aep.FrameSender, Cause: string(rune('a'+i%26)) + strings.Repeat("x", i), Source: "src", By: "b"})
	}
	if len(s.by) != maxSenders || len(s.order) != maxSenders {
		t.Fatalf("%d held; want %d", len(s.by), maxSenders)
	}
	if _, ok := s.take("src", "a"); ok {
		t.Errorf("the oldest is still held")
	}
	last := string(rune('a'+(maxSenders+9)%26)) + strings.Repeat("x", maxSenders+9)
	if f, ok := s.take("src", last); !ok || f.By != "b" {
		t.Errorf("the newest is not held")
	}
	if _, ok := s.take("src", last); ok {
		t.Errorf("a sender frame was taken twice")
	}
}

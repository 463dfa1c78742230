package endpoint

import (
	"encoding/json"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// FuzzFrame feeds one arbitrary text frame, after a hello, to a
// connection's dispatcher, and checks what the connection answers against
// the binding's rules:
//   - text that is not a frame gets exactly one invalid-frame error;
//   - a subscribe with an id gets exactly one subscribed or error naming it;
//   - a ping gets exactly one pong echoing its t; a roster request exactly
//     one roster or error;
//   - an event gets at most one error, naming the event's id when it has
//     one; a command for the claimed session that it accepts gets none (the
//     session decides it, and acks as an event);
//   - a frame of unknown type gets nothing;
//   - every answer is a well-formed frame.
func FuzzFrame(f *testing.F) {
	f.Add(`{"type":"subscribe","id":"s","filter":{"type":["attention.*"],"severity":{"gte":"notice"}},"from":[{"session":"s","epoch":0,"seq":3}],"capture":"metadata"}`)
	f.Add(`{"type":"subscribe","id":"s","from":"all"}`)
	f.Add(`{"aep":"0.1","id":"C","type":"control.attention.respond","subject":"Q","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/o","agent":"o","session":"s1","data":{"answer":{"values":{"a":1}}}}`)
	f.Add(`{"aep":"0.1","id":"E","type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/o/session/z","agent":"o","session":"z","seq":1,"data":{}}`)
	f.Add(`{"type":"roster","id":"r"}`)
	f.Add(`{"type":"ping","t":12}`)
	f.Add(`{"type":"unsubscribe","id":"s"}`)
	f.Add(`{"type":"mystery"}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, data string) {
		s, tg := fuzzSocket(t)
		defer s.stopForFuzz()
		s.dispatch([]byte(`{"type":"hello","versions":["0.1"],"role":"both","identity":{"agent":"o"}}`))
		<-s.ctrl // the endpoint's hello
		s.dispatch([]byte(data))
		replies := drainFrames(t, s.ctrl)
		checkReplies(t, data, replies, len(tg.cmds))
	})
}

// fuzzSocket is a connection of an endpoint that claims session s1, with
// no network behind it: the test reads what it queues.
func fuzzSocket(t *testing.T) (*socket, *recordingTarget) {
	t.Helper()
	e, err := New(Options{Token: testToken, Hub: bus.NewHub()})
	if err != nil {
		t.Fatal(err)
	}
	tg := &recordingTarget{}
	e.AddClaim(Claim{Session: "s1", Agent: "bridge", Accepts: []string{"control.attention.respond"}, Target: tg})
	s := &socket{e: e, ctrl: make(chan []byte, e.opts.queue), out: make(chan []byte, e.opts.queue),
		bye: make(chan string, 1), done: make(chan struct{}), subs: map[string]*socketSub{}}
	s.auth = e.access.Connect(authority.TokenHolder(), s)
	return s, tg
}

// stopForFuzz ends what dispatch started: the subscriptions' forwarders.
func (s *socket) stopForFuzz() {
	close(s.done)
	s.mu.Lock()
	for _, ss := range s.subs {
		ss.sub.Close()
	}
	s.mu.Unlock()
	s.fwg.Wait()
}

func drainFrames(t *testing.T, ch chan []byte) []aep.Frame {
	t.Helper()
	var out []aep.Frame
	for {
		select {
		case b := <-ch:
			f, err := aep.DecodeFrame(b)
			if err != nil {
				t.Fatalf("the connection answered with a malformed frame: %q", b)
			}
			out = append(out, f)
		default:
			return out
		}
	}
}

func checkReplies(t *testing.T, data string, replies []aep.Frame, routed int) {
	t.Helper()
	f, err := aep.DecodeFrame([]byte(data))
	one := func(ok func(r aep.Frame) bool, what string) {
		t.Helper()
		if len(replies) != 1 || !ok(replies[0]) {
			t.Fatalf("%s for %q; got %+v", what, data, replies)
		}
	}
	switch {
	case err != nil:
		one(func(r aep.Frame) bool { return r.Type == aep.FrameError && r.Code == "invalid-frame" }, "want one invalid-frame error")
	case aep.IsEventType(f.Type):
		checkEventReplies(t, data, replies, routed)
	case f.Type == aep.FrameSubscribe && f.ID != "":
		one(func(r aep.Frame) bool {
			return (r.Type == aep.FrameSubscribed || r.Type == aep.FrameError) && r.ID == f.ID
		},
			"want one subscribed or error naming the subscription")
	case f.Type == aep.FramePing:
		one(func(r aep.Frame) bool { return r.Type == aep.FramePong && string(r.T) == string(f.T) }, "want one pong echoing t")
	case f.Type == aep.FrameRoster:
		one(func(r aep.Frame) bool { return r.Type == aep.FrameRoster || r.Type == aep.FrameError }, "want one roster or error")
	case f.Type == aep.FrameHello || f.Type == aep.FrameSubscribe || f.Type == aep.FrameUnsubscribe:
		if len(replies) > 1 {
			t.Fatalf("more than one answer to %q: %+v", data, replies)
		}
	default:
		if len(replies) != 0 && f.Type != aep.FrameClosing {
			t.Fatalf("a frame of unknown type %q got answers: %+v", f.Type, replies)
		}
	}
}

func checkEventReplies(t *testing.T, data string, replies []aep.Frame, routed int) {
	t.Helper()
	if len(replies) > 1 {
		t.Fatalf("more than one answer to an event: %+v", replies)
	}
	var probe struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Session string `json:"session"`
	}
	json.Unmarshal([]byte(data), &probe)
	if len(replies) == 1 && replies[0].Cause != probe.ID && probe.ID != "" {
		if _, err := aep.Parse([]byte(data)); err == nil {
			t.Fatalf("the refusal of event %q names %q", probe.ID, replies[0].Cause)
		}
	}
	if routed > 0 && len(replies) != 0 {
		t.Fatalf("a command the session took also got an error frame: %+v", replies)
	}
}

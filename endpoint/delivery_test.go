package endpoint

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
)

// frame is what a test reads of a frame or an event.
type frame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Cause   string          `json:"cause"`
	Code    string          `json:"code"`
	Detail  string          `json:"detail"`
	Session string          `json:"session"`
	Seq     *int64          `json:"seq"`
	T       json.RawMessage `json:"t"`
	Earlier struct {
		Seq int64 `json:"seq"`
	} `json:"earliest"`
}

func (w *wsClient) frame() frame {
	w.t.Helper()
	w.c.SetReadDeadline(deadline())
	_, b, err := w.c.ReadMessage()
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		w.t.Fatalf("frame %s: %v", b, err)
	}
	return f
}

// TestTenThousandEventReplayIsNeverClosed: a consumer replaying 10,000
// events as fast as it reads, pinging and receiving live events meanwhile,
// on a connection whose queues are tiny, gets everything and is never
// closed as too slow.
func TestTenThousandEventReplayIsNeverClosed(t *testing.T) {
	const n, live = 10000, 300
	f := newFixture(t, bus.HubOptions{ReplayPerSession: n, ReplaySessionBytes: 64 << 20}, Options{queue: 8})
	for range n {
		emit(t, f.em, "progress.status", nil)
	}
	c := dial(t, f.srv)
	c.hello()
	c.send(`{"type":"subscribe","id":"all","from":"all"}`)
	events, pongs, pinged := 0, 0, false
	for events < n+live || pongs == 0 {
		fr := c.frame()
		switch {
		case fr.Type == "closing" || fr.Type == "error":
			t.Fatalf("after %d events: %+v", events, fr)
		case fr.Type == "pong":
			pongs++
		case strings.Contains(fr.Type, "."):
			if *fr.Seq != int64(events) {
				t.Fatalf("event %d has seq %d; want positions in order", events, *fr.Seq)
			}
			events++
		}
		if events == 100 && !pinged {
			pinged = true
			c.send(`{"type":"ping","t":1}`) // a reply while the replay fills the queue
			for range live {
				emit(t, f.em, "progress.status", nil)
			}
		}
	}
}

// floodPastTheBuffer posts buffer+8 events of a fresh session (epoch 1) in
// batches, as the live checker's eviction check does, and returns the
// session.
func floodPastTheBuffer(t *testing.T, base string, buffer, run int) string {
	t.Helper()
	session := fmt.Sprintf("live-evict-%d", run)
	var lines []string
	for seq := range buffer + 8 {
		lines = append(lines, fmt.Sprintf(`{"aep":"0.1","id":"E%d-%d","type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://live-check/agent/aep-live-check/session/%s","agent":"aep-live-check","session":%q,"seq":%d,"epoch":1}`,
			run, seq, session, session, seq))
	}
	for i := 0; i < len(lines); i += 500 {
		resp := postNDJSON(t, base, lines[i:min(i+500, len(lines))]...)
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("flood: HTTP %d", resp.StatusCode)
		}
	}
	return session
}

// replayFromTheStart subscribes over WebSocket from a position the buffer
// no longer holds, pings in the middle, and checks the delivery: the
// replay-exhausted frame first, then every held position ascending from
// the earliest to the last posted one, and the pong.
func replayFromTheStart(t *testing.T, f *fixture, session string, last int64) {
	t.Helper()
	from := fmt.Sprintf(`[{"session":%q,"epoch":1,"seq":0}]`, session)
	c := dial(t, f.srv)
	c.hello()
	c.send(`{"type":"subscribe","id":"x","filter":{"session":"` + session + `"},"from":` + from + `}`)
	earliest, prev, pong := int64(-1), int64(-1), false
	for prev != last || !pong {
		fr := c.frame()
		switch {
		case fr.Type == "replay-exhausted":
			earliest = fr.Earlier.Seq
		case fr.Type == "pong":
			pong = true
		case fr.Type == "closing" || fr.Type == "error":
			t.Fatalf("after seq %d: %+v", prev, fr)
		case strings.Contains(fr.Type, "."):
			switch {
			case earliest < 1:
				t.Fatalf("event seq %d before the replay-exhausted frame", *fr.Seq)
			case prev < 0 && *fr.Seq != earliest, prev >= 0 && *fr.Seq != prev+1:
				t.Fatalf("seq %d after %d (earliest %d); want every held position in order", *fr.Seq, prev, earliest)
			}
			if prev = *fr.Seq; prev == earliest+3 {
				c.send(`{"type":"ping"}`)
			}
		}
	}
	sseGot := sseData(sse(t, f.srv.URL, "live=0&from="+url.QueryEscape(from)))
	if len(sseGot) != int(last-earliest+1) {
		t.Fatalf("SSE replayed %d; want %d, as WebSocket did", len(sseGot), last-earliest+1)
	}
}

// TestFloodPastTheBufferReachesTheLastEvent runs the live checker's
// eviction scenario 50 times with a connection queue far smaller than the
// replay, where a reply used to overflow the queue the replay filled and
// end the delivery early; then once at the default buffer.
func TestFloodPastTheBufferReachesTheLastEvent(t *testing.T) {
	f := newFixture(t, bus.HubOptions{ReplayPerSession: 64}, Options{queue: 8})
	for run := range 50 {
		session := floodPastTheBuffer(t, f.srv.URL, 64, run)
		replayFromTheStart(t, f, session, 64+7)
	}
	d := newFixture(t, bus.HubOptions{}, Options{})
	session := floodPastTheBuffer(t, d.srv.URL, bus.DefaultReplayPerSession, 0)
	replayFromTheStart(t, d, session, bus.DefaultReplayPerSession+7)
}

// ackingTarget acks every command it takes, as a session's intake does.
type ackingTarget struct{ em *bus.Emitter }

func (a ackingTarget) Submit(cmd aep.Event, _ control.Sender) (string, string) {
	a.em.Emit(aep.Draft{Type: "control.accepted", Cause: cmd.ID, Capture: aep.CaptureMetadata})
	return "", ""
}

// TestEveryCommandGetsExactlyOneReply sends 1,000 commands back to back on
// one connection: each gets its ack or an error frame naming it, never
// both, never nothing. The endpoint's clock stands still, so the rate
// refills nothing however slowly the machine sends: the burst is
// accepted, the rest refused.
func TestEveryCommandGetsExactlyOneReply(t *testing.T) {
	onEveryPlane(t, testEveryCommandGetsExactlyOneReply)
}

func testEveryCommandGetsExactlyOneReply(t *testing.T, tp testPlane) {
	const n = 1000
	still := time.Now()
	f := newPlaneFixture(t, tp, bus.HubOptions{}, Options{now: func() time.Time { return still }})
	f.target.Store(&targetOf{ackingTarget{f.em}})
	c := dial(t, f.srv)
	c.hello()
	c.send(`{"type":"subscribe","id":"acks","filter":{"type":["control.accepted"],"session":"` + f.session + `"}}`)
	if fr := c.frame(); fr.Type != "subscribed" {
		t.Fatalf("subscribe: %+v", fr)
	}
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if err := c.c.WriteMessage(websocket.TextMessage, []byte(f.cmdTo(fmt.Sprintf("C%d", i)))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	replies, limited := map[string]string{}, 0
	for len(replies) < n {
		fr := c.frame()
		id := fr.Cause
		switch {
		case fr.Type == "error" && fr.Code == "limit-exceeded" && strings.Contains(fr.Detail, "256") && strings.Contains(fr.Detail, "512"):
			limited++
		case fr.Type == "control.accepted":
		default:
			t.Fatalf("unexpected %+v", fr)
		}
		if prev, twice := replies[id]; twice {
			t.Fatalf("command %s answered twice: %s, then %s", id, prev, fr.Type)
		}
		replies[id] = fr.Type
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	// The subscribe took one of the burst.
	if limited != n-(frameBurst-1) {
		t.Fatalf("%d of %d refused for the rate; want the rest of the burst (%d) accepted and the rest refused", limited, n, frameBurst-1)
	}
	// Nothing more is on its way: a ping is answered next.
	c.send(`{"type":"ping","t":2}`)
	if fr := c.frame(); fr.Type != "pong" {
		t.Fatalf("after the replies: %+v; want nothing but the pong", fr)
	}
}

package bus

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func event(id string, seq int64, sev aep.Severity) aep.Event {
	return aep.Event{AEP: aep.Version, ID: id, Type: "progress.status", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/a/session/s", Agent: "a", Session: "s", Seq: aep.Int64(seq), Severity: sev}
}

// TestSlowSubscriberNeverLosesNoticeSilently pins AEP-0003 §8.4: debug and
// info may be dropped (and are counted); a notice that does not fit ends
// the subscription with a reason instead of vanishing.
func TestSlowSubscriberNeverLosesNoticeSilently(t *testing.T) {
	h := NewHub()
	sub := h.Subscribe(nil, 2)
	h.Write(event("1", 0, aep.SeverityInfo), []byte("1"))
	h.Write(event("2", 1, aep.SeverityInfo), []byte("2"))
	h.Write(event("3", 2, aep.SeverityDebug), []byte("3")) // queue full: dropped, counted
	if sub.Dropped() != 1 {
		t.Fatalf("dropped %d; want 1", sub.Dropped())
	}
	h.Write(event("4", 3, aep.SeverityNotice), []byte("4")) // cannot fit: the subscription ends
	var got []string
	for d := range sub.C {
		got = append(got, d.Event.ID)
	}
	var slow ErrSlowSubscriber
	if !errors.As(sub.Err(), &slow) || len(got) != 2 {
		t.Fatalf("got %v, err %v; want the two queued events then ErrSlowSubscriber", got, sub.Err())
	}
	// Other subscribers are unaffected.
	other := h.Subscribe(nil, 8)
	h.Write(event("5", 4, aep.SeverityNotice), []byte("5"))
	if d := <-other.C; d.Event.ID != "5" {
		t.Fatalf("other subscriber got %s", d.Event.ID)
	}
}

func TestReplayBufferBoundsAndEviction(t *testing.T) {
	h := NewHubWith(HubOptions{ReplayPerSession: 3, ReplaySessions: 2})
	for i := 0; i < 5; i++ {
		h.Write(event(string(rune('a'+i)), int64(i), aep.SeverityInfo), nil)
	}
	h.Write(event("a", 0, aep.SeverityInfo), nil) // redelivery: admitted once
	sub, ex := h.SubscribeFrom(nil, From{Positions: []Position{{Session: "s", Seq: 0}}}, 1)
	if len(ex) != 1 || ex[0].Earliest.Seq != 2 {
		t.Fatalf("exhausted %v; want earliest seq 2", ex)
	}
	if _, n := sub.Counts(); n != 3 {
		t.Fatalf("replayed %d; want the 3 held", n)
	}
	// A third session evicts the least recently written one.
	e2 := event("x", 0, aep.SeverityInfo)
	e2.Session, e2.Source = "s2", "aep://h/agent/a/session/s2"
	e3 := e2
	e3.ID, e3.Session, e3.Source = "y", "s3", "aep://h/agent/a/session/s3"
	h.Write(e2, nil)
	h.Write(e3, nil)
	all, _ := h.SubscribeFrom(nil, From{All: true}, 1)
	if _, n := all.Counts(); n != 2 {
		t.Fatalf("replay-all held %d events; want 2 (session s evicted)", n)
	}
}

// TestBacklogNeverCountsAgainstTheLiveQueue: a subscription starting with
// 10,000 replayed events and a live queue of 4 takes 4 live events while
// its reader has not started, and delivers all of them in order.
func TestBacklogNeverCountsAgainstTheLiveQueue(t *testing.T) {
	const n = 10000
	h := NewHubWith(HubOptions{ReplayPerSession: n, ReplaySessionBytes: 64 << 20})
	for i := range n {
		h.Write(event(fmt.Sprintf("R%d", i), int64(i), aep.SeverityNotice), []byte("r"))
	}
	sub, _ := h.SubscribeFrom(nil, From{All: true}, 4)
	defer sub.Close()
	for i := range 4 {
		h.Write(event(fmt.Sprintf("L%d", i), int64(n+i), aep.SeverityNotice), []byte("l"))
	}
	if err := sub.Err(); err != nil {
		t.Fatalf("closed before its reader started: %v", err)
	}
	got := 0
	for d := range sub.Backlog() {
		if want := fmt.Sprintf("R%d", got); d.Event.ID != want {
			t.Fatalf("backlog %d is %s; want %s", got, d.Event.ID, want)
		}
		got++
	}
	for i := range 4 {
		if d := <-sub.C; d.Event.ID != fmt.Sprintf("L%d", i) {
			t.Fatalf("live %d is %s", i, d.Event.ID)
		}
	}
	if got != n || sub.Err() != nil {
		t.Fatalf("replayed %d, err %v; want %d and no error", got, sub.Err(), n)
	}
}

// TestStateEventsAreNeverDroppedForASlowSubscriber: info events may be
// dropped (and are counted), but a question's lifecycle and a command's
// ack are state: one that does not fit ends the subscription with a reason.
func TestStateEventsAreNeverDroppedForASlowSubscriber(t *testing.T) {
	tests := []struct {
		name    string
		typ     string
		dropped bool
	}{
		{"progress is dropped", "progress.status", true},
		{"an answer is state", "attention.answered", false},
		{"an ack is state", "control.accepted", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub()
			sub := h.Subscribe(nil, 1)
			h.Write(event("1", 0, aep.SeverityInfo), nil)
			ev := event("2", 1, aep.SeverityInfo)
			ev.Type = tt.typ
			h.Write(ev, nil)
			var slow ErrSlowSubscriber
			switch {
			case tt.dropped && (sub.Dropped() != 1 || sub.Err() != nil):
				t.Fatalf("dropped %d, err %v; want one counted drop", sub.Dropped(), sub.Err())
			case !tt.dropped && !errors.As(sub.Err(), &slow):
				t.Fatalf("err %v, dropped %d; want the subscription closed as slow", sub.Err(), sub.Dropped())
			}
			sub.Close()
		})
	}
}

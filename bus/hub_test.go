package bus

import (
	"errors"
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
	h := NewHubSize(3, 2)
	for i := 0; i < 5; i++ {
		h.Write(event(string(rune('a'+i)), int64(i), aep.SeverityInfo), nil)
	}
	h.Write(event("a", 0, aep.SeverityInfo), nil) // redelivery: admitted once
	sub, ex := h.SubscribeFrom(nil, From{Positions: []Position{{Session: "s", Seq: 0}}}, 1)
	if len(ex) != 1 || ex[0].Earliest.Seq != 2 {
		t.Fatalf("exhausted %v; want earliest seq 2", ex)
	}
	if n := len(sub.C); n != 3 {
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
	if n := len(all.C); n != 2 {
		t.Fatalf("replay-all held %d events; want 2 (session s evicted)", n)
	}
}

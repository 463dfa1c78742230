package planetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// Wait bounds every wait of the suite: propagation across a cluster
// under load, a leader election included, fits well within it.
const Wait = 30 * time.Second

// Watch is a live subscription to a door's hub that a test reads events
// from, in order, each wait bounded.
type Watch struct {
	t   *testing.T
	sub *bus.Subscription
	// seen are the deliveries read so far.
	seen []*bus.Delivery
}

// Subscribe starts a live subscription on a member's hub, with the open
// questions it holds as its backlog.
func Subscribe(t *testing.T, h *bus.Hub) *Watch {
	t.Helper()
	sub, _ := h.SubscribeFrom(nil, bus.From{}, 1<<16)
	t.Cleanup(sub.Close)
	w := &Watch{t: t, sub: sub}
	for d := range sub.Backlog() {
		w.seen = append(w.seen, d)
	}
	return w
}

// Until reads events until match accepts one, and returns it; it fails
// the test after Wait.
func (w *Watch) Until(what string, match func(ev *aep.Event) bool) *bus.Delivery {
	w.t.Helper()
	for _, d := range w.seen {
		if match(&d.Event) {
			return d
		}
	}
	timer := time.NewTimer(Wait)
	defer timer.Stop()
	for {
		select {
		case d, ok := <-w.sub.C:
			if !ok {
				w.t.Fatalf("waiting for %s: the subscription ended: %v", what, w.sub.Err())
			}
			w.seen = append(w.seen, d)
			if match(&d.Event) {
				return d
			}
		case <-timer.C:
			w.t.Fatalf("waiting for %s: nothing after %v", what, Wait)
		}
	}
}

// Seen returns what the watch has read so far, in order.
func (w *Watch) Seen() []*bus.Delivery { return w.seen }

// After returns the watch as it would be had it read only what came
// after its first n deliveries: Until looks no further back.
func (w *Watch) After(n int) *Watch {
	w.seen = w.seen[n:]
	return w
}

// Is matches an event of type typ about subject ("" for any), by its
// id, subject or cause.
func Is(typ, about string) func(ev *aep.Event) bool {
	return func(ev *aep.Event) bool {
		return ev.Type == typ && (about == "" || ev.ID == about || ev.Subject == about || ev.Cause == about)
	}
}

// OpenIDs returns the ids of the open questions a new subscription to h
// starts with, in order.
func OpenIDs(h *bus.Hub) []string {
	sub, _ := h.SubscribeFrom(nil, bus.From{}, 1)
	defer sub.Close()
	var ids []string
	for d := range sub.Backlog() {
		ids = append(ids, d.Event.ID)
	}
	return ids
}

// Eventually waits until cond holds, checking it every 10ms, and fails
// the test after Wait; what names the condition.
func Eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.NewTimer(Wait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("waiting for %s: %v", what, err)
		case <-tick.C:
		}
	}
}

// SameOpen reports how the open set of h differs from want, or nil.
func SameOpen(h *bus.Hub, want map[string]bool) error {
	got := OpenIDs(h)
	if len(got) != len(want) {
		return fmt.Errorf("%d open questions; want %d", len(got), len(want))
	}
	for _, id := range got {
		if !want[id] {
			return fmt.Errorf("question %s is open; want it not", id)
		}
	}
	return nil
}

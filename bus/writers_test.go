package bus

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// ask puts a question of e in h, from writer w ("" for a POST of e's
// source), expiring at expires unless it is zero.
func ask(t *testing.T, h *Hub, w string, e *emitter, id string, expires time.Time) error {
	t.Helper()
	data := map[string]any{"kind": "input", "prompt": "p"}
	if !expires.IsZero() {
		data["expires_at"] = expires.Format(time.RFC3339Nano)
	}
	ev, raw := e.event(id, "attention.requested", "srv", data)
	if w == "" {
		return h.Ingest([]*aep.Event{&ev}, [][]byte{raw})
	}
	return h.IngestFrom(w, []*aep.Event{&ev}, [][]byte{raw})
}

// openIDs lists the open questions, oldest first.
func openIDs(h *Hub) []string {
	sub, _ := h.SubscribeFrom(nil, From{}, 1)
	defer sub.Close()
	out := []string{}
	for d := range sub.Backlog() {
		out = append(out, d.Event.ID)
	}
	return out
}

// TestAWritersQuestionsLeaveWhenItDoesNotComeBack plays writers leaving
// and coming back on a fake clock (testing/synctest): the open questions
// of a writer that left leave the open set OrphanWait after it left, or
// at their expires_at if sooner; a writer that comes back in time keeps
// them; a joined bridge (keepDated) keeps its dated ones until their
// expires_at plus ExpiredGrace; a source that POSTs is a writer that
// left at its last post; the process's own questions wait for their
// owner. The history keeps every question, and the hub forgets the
// writers once their questions are gone.
func TestAWritersQuestionsLeaveWhenItDoesNotComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewHub()
		t0 := time.Now()
		socket, bridge, back, poster := newEmitter("socket"), newEmitter("bridge"), newEmitter("back"), newEmitter("poster")
		for _, q := range []struct {
			w       string
			e       *emitter
			id      string
			expires time.Time
		}{
			{"w-socket", socket, "S-UNDATED", time.Time{}},
			{"w-socket", socket, "S-SOON", t0.Add(time.Minute)},
			{"w-socket", socket, "S-LATE", t0.Add(time.Hour)},
			{"w-bridge", bridge, "B-UNDATED", time.Time{}},
			{"w-bridge", bridge, "B-DATED", t0.Add(time.Hour)},
			{"w-back", back, "K-UNDATED", time.Time{}},
			{"", poster, "P-UNDATED", time.Time{}},
		} {
			if err := ask(t, h, q.w, q.e, q.id, q.expires); err != nil {
				t.Fatalf("%s: %v", q.id, err)
			}
		}
		local := newEmitter("local")
		local.write(h, "L-UNDATED", "attention.requested", "srv")
		h.Left("w-socket", false)
		h.Left("w-bridge", true)
		h.Left("w-back", false)

		step := func(d time.Duration, want ...string) {
			t.Helper()
			time.Sleep(d)
			if diff := cmp.Diff(want, openIDs(h)); diff != "" {
				t.Fatalf("open at t0+%v (-want +got):\n%s", time.Since(t0), diff)
			}
		}
		step(time.Minute-time.Nanosecond, "S-UNDATED", "S-SOON", "S-LATE", "B-UNDATED", "B-DATED", "K-UNDATED", "P-UNDATED", "L-UNDATED")
		step(time.Nanosecond, "S-UNDATED", "S-LATE", "B-UNDATED", "B-DATED", "K-UNDATED", "P-UNDATED", "L-UNDATED")
		h.Back("w-back")
		step(OrphanWait-time.Minute-time.Nanosecond, "S-UNDATED", "S-LATE", "B-UNDATED", "B-DATED", "K-UNDATED", "P-UNDATED", "L-UNDATED")
		step(time.Nanosecond, "B-DATED", "K-UNDATED", "L-UNDATED")
		step(time.Hour+ExpiredGrace-OrphanWait, "B-DATED", "K-UNDATED", "L-UNDATED")
		step(time.Nanosecond, "K-UNDATED", "L-UNDATED")

		if st := h.Stats(); st.Open != 2 {
			t.Fatalf("stats %+v; want 2 open", st)
		}
		h.mu.Lock()
		writers := len(h.open.writers)
		h.mu.Unlock()
		if writers != 1 {
			t.Fatalf("the hub remembers %d writers; want only the one that came back", writers)
		}
		all, _ := h.SubscribeFrom(nil, From{All: true}, 16)
		defer all.Close()
		if got := ids(all); len(got) != 8 {
			t.Fatalf("history %v; want every question kept", got)
		}
		// A question that left stays its asker's.
		ev, raw := newEmitter("evil").event("X", "attention.resolved", "S-UNDATED", nil)
		var ie *IngestError
		if err := h.Ingest([]*aep.Event{&ev}, [][]byte{raw}); !errors.As(err, &ie) || ie.Code != "unauthorized" {
			t.Fatalf("another emitter settling a question that left: %v; want unauthorized", err)
		}
	})
}

// TestOneWriterHoldsAtMostItsShare: a writer that floods is refused at its
// share of the open-question bytes, naming it, while another writer's
// question, and the process's own, still get in; a writer's questions that
// leave make room for it again.
func TestOneWriterHoldsAtMostItsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewHubWith(HubOptions{OpenBytes: 64 << 10})
		flood := newEmitter("flood")
		big := map[string]string{"prompt": strings.Repeat("x", 2<<10)}
		var refused *IngestError
		for i := range 64 {
			ev, raw := flood.event(fmt.Sprintf("F%d", i), "attention.requested", "srv", big)
			if err := h.IngestFrom("flood", []*aep.Event{&ev}, [][]byte{raw}); err != nil {
				if !errors.As(err, &refused) {
					t.Fatal(err)
				}
				break
			}
		}
		if refused == nil || refused.Code != "limit-exceeded" || !strings.Contains(refused.Detail, "its share") || !strings.Contains(refused.Detail, "16384 bytes") {
			t.Fatalf("the flood: %v; want limit-exceeded naming its 16384-byte share", refused)
		}
		if st := h.Stats(); st.OpenBytes > 16<<10 {
			t.Fatalf("the flood holds %d bytes; want at most its share", st.OpenBytes)
		}
		if err := ask(t, h, "bridge", newEmitter("bridge"), "B", time.Time{}); err != nil {
			t.Fatalf("another writer's question while the flood is at its share: %v", err)
		}
		if err := ask(t, h, "", newEmitter("poster"), "P", time.Time{}); err != nil {
			t.Fatalf("a POSTed question while the flood is at its share: %v", err)
		}
		h.Left("flood", false)
		time.Sleep(OrphanWait)
		if err := ask(t, h, "flood", flood, "F-AGAIN", time.Time{}); err != nil {
			t.Fatalf("the flood after its questions left: %v; want room again", err)
		}
	})
}

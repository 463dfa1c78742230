package endpoint

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
)

// fakeClock is a hub's clock that a test moves on.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newFakeClock() *fakeClock           { c := &fakeClock{}; c.ns.Store(time.Now().UnixNano()); return c }
func doorOn(t *testing.T, m *natsplane.Member) *httptest.Server {
	t.Helper()
	ep, err := New(Options{Token: testToken, Hub: m.Hub(), Plane: m})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ep.Handler())
	t.Cleanup(func() { ep.Close(); srv.Close() })
	return srv
}

// TestEmitterOnAnotherDoor connects an AEP emitter to door C's /socket
// on the operator plane on JetStream, and an operator to door A's: the
// operator sees the emitter's question, answers it on A, the emitter gets
// the command on C, and its ack reaches the operator on A. When the
// emitter disconnects, its question follows the abandoned rule on A too.
func TestEmitterOnAnotherDoor(t *testing.T) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	clock := newFakeClock()
	a, _ := openMember(t, cl.Node(0).URL(), prefix, bus.HubOptions{Now: clock.now})
	c, _ := openMember(t, cl.Node(2).URL(), prefix, bus.HubOptions{})
	srvA, srvC := doorOn(t, a), doorOn(t, c)

	em := emitterConn(t, srvC, "i1")
	const src, session = "aep://ext/agent/e", "ext-session"
	if f := em.sendEvent(remoteEvent(src, session, "Q", "attention.requested", "srv", 1)); f != nil {
		t.Fatalf("door C refused its emitter's question: %v", f)
	}

	op := dial(t, srvA)
	op.hello()
	op.send(`{"type":"subscribe","id":"s","filter":{"session":"` + session + `"}}`)
	until := func(what string, match func(f map[string]any) bool) map[string]any {
		t.Helper()
		for {
			f := op.read()
			if f["type"] == "error" {
				t.Fatalf("waiting for %s, door A sent an error: %v", what, f)
			}
			if match(f) {
				return f
			}
		}
	}
	until("the question on door A", func(f map[string]any) bool { return f["type"] == "attention.requested" && f["id"] == "Q" })
	if got := planetest.OpenIDs(a.Hub()); !slices.Contains(got, "Q") {
		t.Fatalf("door A's open set %v lacks the emitter's question", got)
	}
	waitRoster(t, a, session)
	// Another emitter, on door A, may not write the session that C's
	// emitter claims.
	if f := emitterConn(t, srvA, "i2").sendEvent(remoteEvent(src, session, "Q2", "attention.requested", "srv", 5)); f == nil || f["code"] != "unauthorized" {
		t.Fatalf("door A let another emitter write session %s that door C's emitter claims: %v", session, f)
	}

	cmd := fmt.Sprintf(`{"aep":"0.1","id":"C1","type":"control.attention.respond","subject":"Q","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":%q,"data":{"answer":{"option":"yes"}}}`, session)
	op.send(cmd)
	got := em.read()
	if got["type"] != "control.attention.respond" || got["id"] != "C1" {
		t.Fatalf("the emitter on door C got %v; want command C1", got)
	}
	ack := fmt.Sprintf(`{"aep":"0.1","id":"A1","type":"control.accepted","cause":"C1","time":"2026-01-01T00:00:00Z","source":%q,"agent":"e","session":%q,"seq":2,"severity":"notice","data":{}}`, src, session)
	if f := em.sendEvent(ack); f != nil {
		t.Fatalf("door C refused the emitter's ack: %v", f)
	}
	until("the ack on door A", func(f map[string]any) bool { return f["type"] == "control.accepted" && f["cause"] == "C1" })

	// A live emitter's question waits for it, however long.
	clock.add(bus.OrphanWait + time.Minute)
	if got := planetest.OpenIDs(a.Hub()); !slices.Contains(got, "Q") {
		t.Fatalf("door A dropped the question of a connected emitter: %v", got)
	}
	em.c.Close()
	// Door A hears of the leaving through the plane; until then the
	// question waits. Each check moves A's clock past OrphanWait.
	planetest.Eventually(t, "the abandoned rule on door A", func() error {
		clock.add(bus.OrphanWait + time.Second)
		if got := planetest.OpenIDs(a.Hub()); slices.Contains(got, "Q") {
			return fmt.Errorf("question Q still open on door A: %v", got)
		}
		return nil
	})
	planetest.Eventually(t, "the session leaving door A's roster", func() error {
		if slices.ContainsFunc(a.Sessions(), func(b plane.Binding) bool { return b.Session == session }) {
			return fmt.Errorf("door A still lists session %s", session)
		}
		return nil
	})
}

// TestPostedEventsReachOtherDoors POSTs a question to door C's /events
// on the operator plane on JetStream: door A's hub holds it, open.
func TestPostedEventsReachOtherDoors(t *testing.T) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	a, _ := openMember(t, cl.Node(0).URL(), prefix, bus.HubOptions{})
	c, _ := openMember(t, cl.Node(1).URL(), prefix, bus.HubOptions{})
	arrived := watchArrivals(t, a.Hub())
	srvC := doorOn(t, c)
	if status, e := post(t, srvC.URL, "application/json", remoteEvent("aep://posted/agent/e", "posted", "PQ", "attention.requested", "srv", 1)); status != 202 {
		t.Fatalf("door C answered the POST with %d %+v; want 202", status, e)
	}
	arrived.wait(t, "PQ")
	if got := planetest.OpenIDs(a.Hub()); !slices.Contains(got, "PQ") {
		t.Fatalf("door A's open set %v lacks the POSTed question", got)
	}
}

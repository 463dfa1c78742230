package endpoint

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// testPlane is an operator plane the endpoint's tests run against: the
// in-process one (plane.Local, the default) or the one on NATS JetStream
// (natsplane, on the test binary's shared three-node cluster, every
// stream and bucket with three replicas).
type testPlane struct {
	name string
	// join returns two members of a fresh plane whose hubs have the
	// bounds o (the front door an operator uses, and the process that
	// asks) and a session id the asker may claim.
	join func(t *testing.T, o bus.HubOptions) (door, asker plane.Member, session string)
}

// testPlanes are the planes the parameterised tests run on.
var testPlanes = []testPlane{
	{name: "memory", join: joinLocal},
	{name: "jetstream", join: joinJetStream},
}

// onEveryPlane runs test once per plane, as a subtest named after it.
func onEveryPlane(t *testing.T, test func(t *testing.T, tp testPlane)) {
	for _, tp := range testPlanes {
		t.Run(tp.name, func(t *testing.T) { test(t, tp) })
	}
}

func joinLocal(t *testing.T, o bus.HubOptions) (plane.Member, plane.Member, string) {
	l := plane.NewLocal(o)
	t.Cleanup(l.Close)
	return l.Join(), l.Join(), "s1"
}

// planeHeartbeat is the members' heartbeat on the shared cluster: short,
// and long enough that a member slowed by the race detector keeps
// beating.
const planeHeartbeat = time.Second

func joinJetStream(t *testing.T, o bus.HubOptions) (plane.Member, plane.Member, string) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	door, _ := openMember(t, cl.Node(0).URL(), prefix, o)
	asker, key := openMember(t, cl.Node(2).URL(), prefix, o)
	return door, asker, key.SessionID(aep.NewID())
}

// openMember joins the plane prefix on the node at url with a key of its
// own, until the test ends.
func openMember(t *testing.T, url, prefix string, o bus.HubOptions) (*natsplane.Member, *proof.Key) {
	t.Helper()
	key, err := proof.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := natsplane.Open(ctx, natsplane.Options{URLs: url, User: testnats.User, Password: testnats.Password, Prefix: prefix,
		Token: testToken + "-fleet", Key: key, Agent: "aep-mcp-bridge", Instance: "test", Hub: o, Heartbeat: planeHeartbeat,
		StoreBytes: 16 << 20, Logger: testnats.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Logf("leaving the plane: %v", err)
		}
	})
	return m, key
}

// newPlaneFixture is newFixture on the operator plane tp, as a fleet
// runs it: the endpoint serves one member's hub and routes commands
// through that member (Options.Plane); its session, f.session, asks on
// another member, which claims it. Everything an operator sees of the
// session and sends to it crosses the plane. f.emit returns once the
// event is on the endpoint's hub; the session is on the plane's roster
// when it returns.
func newPlaneFixture(t *testing.T, tp testPlane, hubOpts bus.HubOptions, o Options) *fixture {
	t.Helper()
	door, asker, session := tp.join(t, hubOpts)
	f := &fixture{hub: door.Hub(), session: session, tg: &recordingTarget{}, released: make(chan struct{}, 256),
		arrived: watchArrivals(t, door.Hub())}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "bridge", Session: session, Host: "h", Sinks: []bus.Sink{asker.Sink()},
		AttentionCapture: aep.CaptureRedacted})
	if err != nil {
		t.Fatal(err)
	}
	f.em = em
	o.Token, o.Hub, o.Plane = testToken, f.hub, door
	o.afterRelease = func() { f.released <- struct{}{} }
	if f.ep, err = New(o); err != nil {
		t.Fatal(err)
	}
	f.target.Store(&targetOf{f.tg})
	if err := asker.Claim(plane.Binding{Session: session, Source: em.Source(), Agent: "bridge", Accepts: []string{"control.attention.respond"}},
		planeTarget{f}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { asker.Release(session) })
	f.srv = httptest.NewServer(f.ep.Handler())
	t.Cleanup(func() { f.ep.Close(); f.srv.Close() })
	waitRoster(t, door, session)
	return f
}

// waitRoster waits until door's roster lists session.
func waitRoster(t *testing.T, door plane.Member, session string) {
	t.Helper()
	deadline := time.NewTimer(readGuard)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond) // the roster tells nobody when it changes
	defer tick.Stop()
	for !slices.ContainsFunc(door.Sessions(), func(b plane.Binding) bool { return b.Session == session }) {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("the front door's roster never listed session %s: %+v", session, door.Sessions())
		}
	}
}

// planeTarget hands the commands a plane member routes to the fixture's
// session to its target (f.target).
type planeTarget struct{ f *fixture }

// targetOf is a Target in an atomic.Pointer.
type targetOf struct{ Target }

func (p planeTarget) Submit(cmd aep.Event, _ []byte, by plane.Principal) plane.Outcome {
	code, detail := p.f.target.Load().Submit(cmd, control.Sender{Authenticated: true, By: by.Name, Groups: by.Groups, ReadOnly: !by.May(plane.RightAnswer)})
	return plane.Outcome{Code: code, Detail: detail}
}

// arrivals are the events a hub fanned out, by id: a test waits on them
// until what a session emitted on another member of the plane is there.
type arrivals struct {
	// mu guards seen and changed.
	mu      sync.Mutex
	seen    map[string]bool
	changed chan struct{} // closed at the next arrival
}

// watchArrivals records what h fans out until the test ends. The filter
// runs as the hub fans an event out, and takes none.
func watchArrivals(t *testing.T, h *bus.Hub) *arrivals {
	a := &arrivals{seen: map[string]bool{}, changed: make(chan struct{})}
	sub := h.Subscribe(func(ev *aep.Event) bool {
		a.mu.Lock()
		a.seen[ev.ID] = true
		close(a.changed)
		a.changed = make(chan struct{})
		a.mu.Unlock()
		return false
	}, 1)
	t.Cleanup(sub.Close)
	return a
}

// wait waits until the event id arrived.
func (a *arrivals) wait(t *testing.T, id string) {
	t.Helper()
	deadline := time.NewTimer(readGuard)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		seen, changed := a.seen[id], a.changed
		a.mu.Unlock()
		if seen {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("event %s never reached the front door's hub", id)
		}
	}
}

// emit emits an event of the fixture's session (see the package's emit),
// and returns once it is on the endpoint's hub.
func (f *fixture) emit(t *testing.T, typ string, data any, subject ...string) aep.Event {
	t.Helper()
	ev := emit(t, f.em, typ, data, subject...)
	if f.arrived != nil {
		f.arrived.wait(t, ev.ID)
	}
	return ev
}

// cmdTo is a control.attention.respond to the fixture's session.
func (f *fixture) cmdTo(id string) string {
	return fmt.Sprintf(`{"aep":"0.1","id":%q,"type":"control.attention.respond","subject":"Q","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":%q,"data":{"answer":{"option":"decline"}}}`, id, f.session)
}

package natsplane

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// TestConsumersDeletedUnderTheFollowers deletes every consumer of the
// plane's streams, as a holder of the cluster's credentials (or an
// operator of the cluster) can: each member reads on through new ones,
// from where it was, and a question asked and answered across doors
// after it reaches both, every event once and in order.
func TestConsumersDeletedUnderTheFollowers(t *testing.T) {
	prefix := newPrefix()
	a, c := member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix)
	wa, wc := planetest.Subscribe(t, a.Hub()), planetest.Subscribe(t, c.Hub())
	s := planetest.NewSession(t, door(c))
	before := s.Ask()
	wa.Until("a question asked before the deletion", planetest.Is("attention.requested", before))

	nc, err := nats.Connect(shared.URLs(), nats.UserInfo(clusterUser, clusterPass))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	deleted := 0
	for _, stream := range []string{a.n.events, "KV_" + a.n.open, "KV_" + a.n.sessions, "KV_" + a.n.members} {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		names := st.ConsumerNames(ctx)
		for name := range names.Name() {
			// A consumer listed and gone before its deletion (a follower
			// that replaced it meanwhile) is gone from under its
			// follower all the same.
			if err := st.DeleteConsumer(ctx, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				t.Fatalf("deleting consumer %s of %s: %v", name, stream, err)
			}
			deleted++
		}
		if err := names.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if deleted < 8 {
		t.Fatalf("deleted %d consumers; want at least the 8 of two members' followers", deleted)
	}

	after := s.Ask()
	wa.Until("a question asked after the deletion", planetest.Is("attention.requested", after))
	cmd, raw := planetest.Respond(s.ID(), before, map[string]any{"ok": true})
	if code, detail := a.Command(ctx, plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("answering after the deletion: %s: %s", code, detail)
	}
	wa.Until("the resolution on A", planetest.Is("attention.resolved", before))
	wc.Until("the resolution on C", planetest.Is("attention.resolved", before))
	planetest.Eventually(t, "A's open set", func() error { return planetest.SameOpen(a.Hub(), map[string]bool{after: true}) })
	inOrder(t, "A", wa, s.ID())
}

// TestOpenEntryWaitsForItsEvent: an open question read from its bucket
// before the events stream brought its event opens once the stream is
// there, so the door lists the session's events in their order; one
// whose event the stream no longer holds opens after parkWait.
func TestOpenEntryWaitsForItsEvent(t *testing.T) {
	prefix := newPrefix()
	m := member(t, shared.URLs(), prefix)
	other, err := proof.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// The questions of a real session of other's process, as its sink
	// got them.
	var asked []*capturedEvent
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "planetest", Session: other.SessionID(aep.NewID()), Host: "planetest",
		Sinks: []bus.Sink{sinkFunc(func(ev aep.Event, raw []byte) error {
			if ev.Type == "attention.requested" {
				asked = append(asked, &capturedEvent{ev: ev, raw: raw})
			}
			return nil
		})}})
	if err != nil {
		t.Fatal(err)
	}
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "planetest", Publisher: em, Timeout: 10 * time.Minute})
	defer mgr.Close()
	form, err := translate.Parse("Deploy?", json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := mgr.Raise(attention.Spec{Form: form, Subject: "deployer", RespondVia: []string{"control"},
			Deliver: func(attention.Resolution) {}}); err != nil {
			t.Fatal(err)
		}
	}
	// entryOf states question q at sequence seq, signed by other.
	now := time.Now()
	entryOfQuestion := func(q *capturedEvent, seq uint64) entry {
		key := openKey(other.Fingerprint(), q.ev.ID)
		inner := seal(other, kindEvent, prefix, token(q.ev.Source, q.ev.Session), now, q.raw)
		return entry{key: key, value: seal(other, kindOpen, prefix, key, now, openBody(seq, inner)), op: jetstream.KeyValuePut, created: now}
	}
	m.ingest.Lock()
	next := m.evNext
	m.ingest.Unlock()
	ahead := asked[0].ev.ID
	m.takeOpen(entryOfQuestion(asked[0], next+10))
	m.takeOpen(entryOfQuestion(asked[1], next+20))
	if got := planetest.OpenIDs(m.Hub()); len(got) != 0 {
		t.Fatalf("open questions %v before the stream brought their events; want none yet", got)
	}
	m.ingest.Lock()
	m.passedLocked(next + 10)
	m.ingest.Unlock()
	if got := planetest.OpenIDs(m.Hub()); len(got) != 1 || got[0] != ahead {
		t.Fatalf("open questions %v once the stream passed the first's event; want [%s]", got, ahead)
	}
	m.ingest.Lock()
	m.releaseLocked(0, m.opts.now().Add(time.Second)) // as the heartbeat does, parkWait later
	m.ingest.Unlock()
	if got := planetest.OpenIDs(m.Hub()); len(got) != 2 {
		t.Fatalf("open questions %v past parkWait; want both", got)
	}
}

type capturedEvent struct {
	ev  aep.Event
	raw []byte
}

// sinkFunc is a bus.Sink of a function.
type sinkFunc func(ev aep.Event, raw []byte) error

func (f sinkFunc) Write(ev aep.Event, raw []byte) error { return f(ev, raw) }

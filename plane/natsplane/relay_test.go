package natsplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// relayedEvent is an event an emitter connected to a door writes.
func relayedEvent(t *testing.T, session, id, typ, subject string, seq int, data string) (aep.Event, []byte) {
	t.Helper()
	subj := ""
	if subject != "" {
		subj = fmt.Sprintf(`"subject":%q,`, subject)
	}
	raw := []byte(fmt.Sprintf(`{"aep":"0.1","id":%q,"type":%q,%s"time":"2026-01-01T00:00:00Z","source":"aep://ext/agent/e","agent":"e","session":%q,"seq":%d,"severity":"notice","data":%s}`,
		id, typ, subj, session, seq, data))
	ev, err := aep.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return *ev, raw
}

// recordingTarget records the commands routed to it.
type recordingTarget struct {
	mu   sync.Mutex
	got  [][]byte
	more chan struct{}
}

func (r *recordingTarget) Submit(_ aep.Event, raw []byte, _ plane.Principal) plane.Outcome {
	r.mu.Lock()
	r.got = append(r.got, raw)
	r.mu.Unlock()
	r.more <- struct{}{}
	return plane.Outcome{}
}

// once waits for the target's first command and checks that it is raw,
// byte-identical, and the only one.
func (r *recordingTarget) once(t *testing.T, raw []byte) {
	t.Helper()
	<-r.more
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 1 || !bytes.Equal(r.got[0], raw) {
		t.Fatalf("door F's emitter got %d commands; want the one sent, once, byte-identical", len(r.got))
	}
}

// TestRelayedEmitterAndImpostor has door F relay an emitter's session
// and door A route a command to it, while an impostor with the
// cluster's credentials but not the fleet's token tries to inject a
// question in that session, settle it, claim another session, and
// answer: door A and door F refuse each. Every refusal is checked after
// a later genuine statement the cluster orders behind the forgery.
func TestRelayedEmitterAndImpostor(t *testing.T) {
	prefix := newPrefix()
	f, a := member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix)
	n := f.n
	w := planetest.Subscribe(t, a.Hub())
	const session, writer = "ext-1", "emitter x"
	tg := &recordingTarget{more: make(chan struct{}, 16)}
	if err := f.ClaimRelayed(writer, plane.Binding{Session: session, Source: "aep://ext/agent/e",
		Accepts: []string{"control.attention.respond"}}, tg); err != nil {
		t.Fatal(err)
	}
	q, qRaw := relayedEvent(t, session, "Q", "attention.requested", "srv", 1, `{"kind":"input","prompt":"p"}`)
	f.Relay(writer, false, q, qRaw)
	got := w.Until("the relayed question on A", planetest.Is("attention.requested", "Q"))
	if !bytes.Equal(got.Raw, qRaw) {
		t.Fatalf("door A holds the relayed question as %s; want the emitter's bytes %s", got.Raw, qRaw)
	}
	planetest.Eventually(t, "the relayed session on A's roster", func() error {
		if !slices.ContainsFunc(a.Sessions(), func(b plane.Binding) bool { return b.Session == session }) {
			return fmt.Errorf("not listed: %+v", a.Sessions())
		}
		return nil
	})

	nc, err := nats.Connect(shared.URLs(), nats.UserInfo(clusterUser, clusterPass), nats.NoEcho())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	evil, err := proof.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := relayKeyOf("another-fleets-token-0123456789abcdef", prefix)
	tok := token(q.Source, q.Session)
	// 1. A question and a settle in the session, relayed with the
	// impostor's key and MAC'd with another token; and the genuine
	// door's statement, captured, put under another session's subject.
	_, forgedRaw := relayedEvent(t, session, "FORGED", "attention.requested", "srv", 9, `{"kind":"input","prompt":"p"}`)
	_, settleRaw := relayedEvent(t, session, "S", "attention.resolved", "Q", 10, `{"resolution":"answered"}`)
	elsewhere := token(q.Source, "ext-2")
	for _, put := range []struct {
		tok  string
		data []byte
	}{
		{tok, sealRelayed(evil, otherKey, prefix, tok, time.Now(), relayEvent, false, emitterName(writer), forgedRaw)},
		{tok, sealRelayed(evil, otherKey, prefix, tok, time.Now(), relayEvent, false, emitterName(writer), settleRaw)},
		{tok, seal(evil, kindEvent, prefix, tok, time.Now(), settleRaw)},
		{elsewhere, sealRelayed(f.key, f.relayKey, prefix, tok, time.Now(), relayEvent, false, emitterName(writer), forgedRaw)},
		{tok, append(sealRelayed(f.key, f.relayKey, prefix, tok, time.Now(), relayEvent, false, emitterName(writer), forgedRaw), ' ')},
	} {
		if _, err := js.Publish(ctx, n.eventSubject(put.tok), put.data); err != nil {
			t.Fatal(err)
		}
	}
	// 2. A claim of another session, for the impostor's own key.
	sessions, err := js.KeyValue(ctx, n.sessions)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(plane.Binding{Session: "ext-2", Source: q.Source, Accepts: []string{"control.attention.respond"}})
	if _, err := sessions.Put(ctx, elsewhere, sealRelayed(evil, otherKey, prefix, elsewhere, time.Now(), relayBinding, false, "x", b2)); err != nil {
		t.Fatal(err)
	}
	// 3. Its leaving, stated without the token.
	left := leftToken(f.fp, emitterName(writer))
	if _, err := js.Publish(ctx, n.eventSubject(left), sealRelayed(evil, otherKey, prefix, left, time.Now(), relayLeft, false, emitterName(writer), nil)); err != nil {
		t.Fatal(err)
	}
	// 4. An answer sent to door F without the token.
	cmd, cmdRaw := planetest.Respond(session, "Q", map[string]any{"ok": true})
	other, _ := newSealer("another-fleets-token-0123456789abcdef", prefix)
	plain, _ := json.Marshal(command{Door: evil.Fingerprint(), By: plane.TokenHolder(), Sent: time.Now().UnixNano(), Raw: cmdRaw})
	for _, data := range [][]byte{cmdRaw, other.seal(adOf("cmd", prefix, f.fp), plain)} {
		if err := nc.Publish(n.commandSubject(f.fp), data); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		t.Fatal(err)
	}

	// 5. Another door, with the token, relays an emitter of its own into
	// the session F's emitter claims; then a question of another session,
	// which the stream orders after it.
	g := member(t, shared.URLs(), prefix)
	intruder, intruderRaw := relayedEvent(t, session, "G1", "attention.requested", "srv", 3, `{"kind":"input","prompt":"p"}`)
	g.Relay("emitter y", false, intruder, intruderRaw)
	gb, gbRaw := relayedEvent(t, "ext-3", "GB", "attention.requested", "srv", 1, `{"kind":"input","prompt":"p"}`)
	g.Relay("emitter y", false, gb, gbRaw)
	w.Until("door G's other question on A", planetest.Is("attention.requested", "GB"))

	// The barrier: a genuine question after all of it.
	b, bRaw := relayedEvent(t, session, "B", "attention.requested", "srv", 2, `{"kind":"input","prompt":"p"}`)
	f.Relay(writer, false, b, bRaw)
	w.Until("the barrier on A", planetest.Is("attention.requested", "B"))
	open := planetest.OpenIDs(a.Hub())
	if !slices.Contains(open, "Q") || slices.Contains(open, "FORGED") || slices.Contains(open, "G1") {
		t.Fatalf("door A's open set is %v; want Q open, and neither the forged question nor door G's in F's session", open)
	}
	if code, _ := a.Command(ctx, plane.TokenHolder(), func() *aep.Event { c, _ := planetest.Respond("ext-2", "Q", nil); return c }(), cmdRaw); code != "no-route" {
		t.Fatalf("a command for the impostor's claimed session got %q; want no-route", code)
	}
	// The genuine answer, through A: door F's target gets it alone.
	if code, detail := a.Command(ctx, plane.TokenHolder(), cmd, cmdRaw); code != "" {
		t.Fatalf("the genuine command got %s: %s", code, detail)
	}
	tg.once(t, cmdRaw)
}

// TestRelayedEmitterLeaves has door F relay an emitter's question and
// then its leaving: door A applies the abandoned rule (OrphanWait, on
// A's hub clock, which the test moves), and forgets the emitter's claim
// when F releases it.
func TestRelayedEmitterLeaves(t *testing.T) {
	prefix := newPrefix()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	f := member(t, shared.URLs(), prefix)
	a := member(t, shared.URLs(), prefix, func(o *Options) { o.Hub.Now = now })
	w := planetest.Subscribe(t, a.Hub())
	const session, writer = "ext-1", "emitter x"
	if err := f.ClaimRelayed(writer, plane.Binding{Session: session, Source: "aep://ext/agent/e"}, &recordingTarget{more: make(chan struct{}, 1)}); err != nil {
		t.Fatal(err)
	}
	q, qRaw := relayedEvent(t, session, "Q", "attention.requested", "srv", 1, `{"kind":"input","prompt":"p"}`)
	f.Relay(writer, false, q, qRaw)
	w.Until("the question on A", planetest.Is("attention.requested", "Q"))
	planetest.Eventually(t, "the session on A's roster", func() error {
		if !slices.ContainsFunc(a.Sessions(), func(b plane.Binding) bool { return b.Session == session }) {
			return fmt.Errorf("not listed")
		}
		return nil
	})
	// While its emitter is connected, a question waits however long.
	clock.Add(int64(bus.OrphanWait + time.Hour))
	if got := planetest.OpenIDs(a.Hub()); !slices.Contains(got, "Q") {
		t.Fatalf("A dropped the question of a connected emitter: %v", got)
	}
	f.Release(session)
	f.RelayLeft(writer, false)
	planetest.Eventually(t, "the abandoned rule on A", func() error {
		clock.Add(int64(bus.OrphanWait + time.Second))
		if got := planetest.OpenIDs(a.Hub()); slices.Contains(got, "Q") {
			return fmt.Errorf("Q still open on A: %v", got)
		}
		if slices.ContainsFunc(a.Sessions(), func(b plane.Binding) bool { return b.Session == session }) {
			return fmt.Errorf("A still lists session %s", session)
		}
		return nil
	})
}

// FuzzOpenRelayed feeds the relayed statements' reader what a holder of
// the cluster's credentials could put on the events stream or in the
// sessions' bucket: it opens only what the door's key signed and the
// fleet's token MAC'd, reads it back whole, and never panics.
func FuzzOpenRelayed(f *testing.F) {
	key, _ := proof.NewKey(bytes.NewReader(make([]byte, 64)))
	mac, _ := relayKeyOf(fleetToken, "aep")
	f.Add(sealRelayed(key, mac, "aep", "tok", time.Unix(1, 0), relayEvent, false, "e", []byte(`{"aep":"0.1"}`)))
	f.Add(sealRelayed(key, mac, "aep", "tok", time.Unix(1, 0), relayLeft, true, "emitter", nil))
	f.Add(sealRelayed(key, mac, "aep", "tok", time.Unix(1, 0), relayBinding, false, "e", []byte(`{"session":"s"}`)))
	f.Add([]byte("AEP\x01r"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := openRelayed(mac, "aep", "tok", b)
		if err != nil {
			return
		}
		if r.door != key.Fingerprint() {
			t.Fatalf("opened a relayed statement of another key: %x", b)
		}
		again := sealRelayed(key, mac, "aep", "tok", r.signedAt, r.op, r.keepDated, r.emitter, r.payload)
		if !bytes.Equal(again, b) {
			t.Fatalf("a relayed statement does not read back:\n%x\n%x", b, again)
		}
	})
}

// TestRelayedCommandBeforeClaimIsRead has door F relay an emitter's
// question while F's claim on the session is held in F's outbox, so
// door A holds the question and has not read the claim: an operator's
// answer on A reaches F's emitter all the same, once, routed to the
// door that relayed the question, which holds the claim.
func TestRelayedCommandBeforeClaimIsRead(t *testing.T) {
	prefix := newPrefix()
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f := member(t, shared.URLs(), prefix, func(o *Options) {
		o.carrying = func(it item) {
			if it.op == opRelayBind {
				once.Do(func() { close(held) })
				<-release
			}
		}
	})
	t.Cleanup(func() { close(release) }) // before f leaves
	a := member(t, shared.URLs(), prefix)
	w := planetest.Subscribe(t, a.Hub())
	const session, writer = "ext-1", "emitter x"
	q, qRaw := relayedEvent(t, session, "Q", "attention.requested", "srv", 1, `{"kind":"input","prompt":"p"}`)
	f.Relay(writer, false, q, qRaw)
	tg := &recordingTarget{more: make(chan struct{}, 16)}
	if err := f.ClaimRelayed(writer, plane.Binding{Session: session, Source: q.Source,
		Accepts: []string{"control.attention.respond"}}, tg); err != nil {
		t.Fatal(err)
	}
	w.Until("the relayed question on A", planetest.Is("attention.requested", "Q"))
	<-held
	if slices.ContainsFunc(a.Sessions(), func(b plane.Binding) bool { return b.Session == session }) {
		t.Fatalf("door A read a claim that door F has not written: %+v", a.Sessions())
	}
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	cmd, cmdRaw := planetest.Respond(session, "Q", map[string]any{"ok": true})
	if code, detail := a.Command(ctx, plane.TokenHolder(), cmd, cmdRaw); code != "" {
		t.Fatalf("an answer on door A before it read door F's claim got %s: %s; want it routed to door F", code, detail)
	}
	tg.once(t, cmdRaw)
}

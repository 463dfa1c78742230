package natsplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// TestImpostorWithTheClusterCredentials gives an impostor the cluster's
// credentials, but neither a bridge's session key nor the fleet's token,
// and has it try every way the bus offers to settle or hijack a session
// that another gateway asks on. The front door (A) and the asking bridge
// (C) refuse each; every refusal is checked after a later genuine event
// that the cluster orders behind the forgery.
func TestImpostorWithTheClusterCredentials(t *testing.T) {
	prefix := newPrefix()
	a, c := member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix)
	n := c.n
	// NoEcho: what the impostor hears on the command subject is what
	// others sent there, not its own forgeries.
	nc, err := nats.Connect(shared.URLs(), nats.UserInfo(clusterUser, clusterPass), nats.NoEcho())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	openKV, err := js.KeyValue(ctx, n.open)
	if err != nil {
		t.Fatal(err)
	}
	// The impostor records every open-question entry it sees, to replay.
	captured := map[string][]byte{}
	capW, err := openKV.WatchAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer capW.Stop()
	// And every command sent to C, answering each with noise first.
	var (
		spied    sync.Mutex
		commands [][]byte
	)
	heard := make(chan struct{}, 1)
	spy, err := nc.Subscribe(n.commandSubject(c.fp), func(m *nats.Msg) {
		spied.Lock()
		commands = append(commands, m.Data)
		spied.Unlock()
		select {
		case heard <- struct{}{}:
		default:
		}
		m.Respond([]byte(`{"code":""}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Unsubscribe()
	nc.Flush()

	w := planetest.Subscribe(t, a.Hub())
	s := planetest.NewSession(t, door(c))
	q := s.Ask()
	asked := w.Until("the question on A", planetest.Is("attention.requested", q))

	// barrier asks a question on C and waits for it on A: the cluster
	// orders it after everything the impostor did before.
	barrier := func(what string) string {
		t.Helper()
		id := s.Ask()
		w.Until(what, planetest.Is("attention.requested", id))
		return id
	}
	stillOpen := func(what string, ids ...string) {
		t.Helper()
		got := planetest.OpenIDs(a.Hub())
		for _, id := range ids {
			if !slices.Contains(got, id) {
				t.Fatalf("%s: A's open set %v lost question %s", what, got, id)
			}
		}
	}

	// 1. A forged settle of C's question on C's session subject, bare
	// and signed with the impostor's own key.
	evil, err := proof.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	resolved := asked.Event
	resolved.ID, resolved.Type, resolved.Subject, resolved.Data = aep.NewID(), "attention.resolved", q, json.RawMessage(`{"resolution":"answered"}`)
	raw, _ := json.Marshal(resolved)
	tok := token(asked.Event.Source, asked.Event.Session)
	for _, data := range [][]byte{raw, seal(evil, kindEvent, prefix, tok, time.Now(), raw)} {
		if _, err := js.Publish(ctx, n.eventSubject(tok), data); err != nil {
			t.Fatal(err)
		}
	}
	// 2. A question of its own in C's session, signed with its key.
	forged := asked.Event
	forged.ID = aep.NewID()
	raw, _ = json.Marshal(forged)
	if _, err := js.Publish(ctx, n.eventSubject(tok), seal(evil, kindEvent, prefix, tok, time.Now(), raw)); err != nil {
		t.Fatal(err)
	}
	b1 := barrier("the first barrier")
	stillOpen("after a forged settle", q)
	if slices.Contains(planetest.OpenIDs(a.Hub()), forged.ID) {
		t.Fatal("A lists a question the impostor signed into C's session")
	}

	// 3. Deleting C's question from the bucket settles nothing, and C
	// states it again.
	key := openKey(c.fp, q)
	restated, err := openKV.Watch(ctx, key, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer restated.Stop()
	if err := openKV.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	for e := range restated.Updates() {
		if e != nil && e.Operation() == jetstream.KeyValuePut {
			break
		}
	}
	stillOpen("after a deleted entry", q, b1)

	// 4. A command to C that is not sealed with the fleet's token, and
	// one sealed with another token: C takes neither.
	other, _ := newSealer("another-fleets-token-0123456789abcdef", prefix)
	cmd, cmdRaw := planetest.Respond(s.ID(), q, map[string]any{"ok": true})
	plain, _ := json.Marshal(command{Door: evil.Fingerprint(), By: plane.TokenHolder(), Sent: time.Now().UnixNano(), Raw: cmdRaw})
	for _, data := range [][]byte{cmdRaw, other.seal(adOf("cmd", prefix, c.fp), plain)} {
		if err := nc.Publish(n.commandSubject(c.fp), data); err != nil {
			t.Fatal(err)
		}
	}
	// The genuine command after them, through A: the impostor answers it
	// first with noise; A waits for C's sealed reply.
	if code, detail := a.Command(ctx, plane.TokenHolder(), cmd, cmdRaw); code != "" {
		t.Fatalf("the genuine command got %s: %s", code, detail)
	}
	w.Until("the genuine answer's ack", planetest.Is("control.accepted", cmd.ID))
	if got := s.Resolutions(q); len(got) != 1 {
		t.Fatalf("C's server got %d resolutions; want the genuine answer alone", len(got))
	}
	// The impostor's copy of the command travels apart from the one C
	// got and replied to: it may arrive after A has C's reply.
	select {
	case <-heard:
	case <-ctx.Done():
		t.Fatal("the impostor heard no command on C's subject; the test proves nothing")
	}
	spied.Lock()
	defer spied.Unlock()
	for _, data := range commands {
		if bytes.Contains(data, []byte("control.attention.respond")) || bytes.Contains(data, []byte(`"ok"`)) {
			t.Fatal("a command travelled readable to a holder of the cluster's credentials")
		}
	}

	// 5. Replaying the captured entry of the settled question opens
	// nothing.
	for e := range capW.Updates() {
		if e == nil {
			continue
		}
		if e.Operation() == jetstream.KeyValuePut {
			captured[e.Key()] = e.Value()
		}
		if _, ok := captured[key]; ok {
			break
		}
	}
	w.Until("the settle on A", planetest.Is("attention.resolved", q))
	if _, err := openKV.Put(ctx, key, captured[key]); err != nil {
		t.Fatal(err)
	}
	barrier("the last barrier")
	if slices.Contains(planetest.OpenIDs(a.Hub()), q) {
		t.Fatal("a replayed entry opened a settled question again on A")
	}
}

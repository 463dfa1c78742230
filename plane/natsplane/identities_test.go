package natsplane

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
)

// idWatch is a front door's identity source, run, with what it handed
// out.
type idWatch struct {
	t    *testing.T
	src  *IdentitySource
	dirs chan *identity.Directory
	errs chan error
}

func watchIdentities(t *testing.T, m *Member) *idWatch {
	w := &idWatch{t: t, dirs: make(chan *identity.Directory, 64), errs: make(chan error, 64)}
	w.src = m.Identities(IdentityOptions{OnLoad: func(d *identity.Directory) { w.dirs <- d }, OnError: func(err error) { w.errs <- err }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.src.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// until waits for a directory handed out that satisfies ok.
func (w *idWatch) until(what string, ok func(*identity.Directory) bool) *identity.Directory {
	w.t.Helper()
	if d := w.src.Directory(); ok(d) {
		return d
	}
	guard := time.After(planetest.Wait)
	for {
		select {
		case d := <-w.dirs:
			if ok(d) {
				return d
			}
		case <-guard:
			w.t.Fatalf("no directory %s within %v", what, planetest.Wait)
		}
	}
}

// refused waits for a refusal that says want.
func (w *idWatch) refused(want string) {
	w.t.Helper()
	guard := time.After(planetest.Wait)
	for {
		select {
		case err := <-w.errs:
			if strings.Contains(err.Error(), want) {
				return
			}
		case <-guard:
			w.t.Fatalf("no refusal saying %q within %v", want, planetest.Wait)
		}
	}
}

func operatorNames(d *identity.Directory) []string {
	var out []string
	for _, o := range d.Document().Operators {
		out = append(out, o.Name)
	}
	return out
}

func has(name string) func(*identity.Directory) bool {
	return func(d *identity.Directory) bool { _, ok := d.Operator(name); return ok }
}

func newOperator(t *testing.T, name string) (identity.Operator, string) {
	t.Helper()
	cred, v, err := identity.NewCredential(identity.KindOperator, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return identity.Operator{Name: name, Can: identity.Answer, Created: time.Now().UTC().Truncate(time.Second), Credential: &v}, cred
}

func openStore(t *testing.T, prefix, token string) *IdentityStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	s, err := OpenIdentities(ctx, Options{URLs: shared.URLs(), User: clusterUser, Password: clusterPass, Prefix: prefix, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestIdentitiesOnThePlane: the named operators that a command writes
// through one connection reach every front door, which authenticates
// them; commands that change them at once lose no change; and someone
// with the cluster's credentials but not the fleet's token can neither
// add an operator, nor undo a revocation by putting back a document it
// captured. Deleting the document ends everyone's access (it fails
// closed), and a document written after is believed.
func TestIdentitiesOnThePlane(t *testing.T) {
	prefix := newPrefix()
	a, b := member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix)
	wa, wb := watchIdentities(t, a), watchIdentities(t, b)
	st := openStore(t, prefix, fleetToken)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()

	alice, cred := newOperator(t, "alice")
	if err := st.Update(ctx, func(d *identity.Document) error { return d.AddOperator(alice) }); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*idWatch{wa, wb} {
		d := w.until("with alice", has("alice"))
		if o, err := d.Authenticate(cred, time.Now()); err != nil || o.Name != "alice" {
			t.Fatalf("alice's credential on a front door: %v, %v", o.Name, err)
		}
	}

	// Eight commands at once, each with a connection of its own.
	var wg sync.WaitGroup
	for i := range 8 {
		s := openStore(t, prefix, fleetToken)
		o, _ := newOperator(t, fmt.Sprintf("op-%d", i))
		wg.Go(func() {
			if err := s.Update(ctx, func(d *identity.Document) error { return d.AddOperator(o) }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	wb.until("with the nine operators", func(d *identity.Directory) bool { return len(d.Document().Operators) == 9 })

	// The impostor has the cluster's credentials.
	kv := impostorBucket(t, ctx, prefix)
	captured, err := kv.Get(ctx, identitiesKey)
	if err != nil {
		t.Fatal(err)
	}

	// alice is revoked; the captured document, which has her, is put
	// back: every door that read the revocation refuses it.
	if err := st.Update(ctx, func(d *identity.Document) error { d.RemoveOperator("alice"); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*idWatch{wa, wb} {
		w.until("without alice", func(d *identity.Directory) bool { return !has("alice")(d) && len(d.Document().Operators) == 8 })
	}
	if _, err := kv.Put(ctx, identitiesKey, captured.Value()); err != nil {
		t.Fatal(err)
	}
	wa.refused("put back")
	wb.refused("put back")
	for _, m := range []*Member{a, b} {
		if _, err := m.directory().Authenticate(cred, time.Now()); err == nil {
			t.Fatal("a revocation was undone by a captured document")
		}
	}

	// Deleting the document ends everyone's access; one written after
	// is believed.
	if err := kv.Delete(ctx, identitiesKey); err != nil {
		t.Fatal(err)
	}
	wb.until("empty", func(d *identity.Directory) bool { return len(d.Document().Operators) == 0 })
	carol, _ := newOperator(t, "carol")
	if err := st.Update(ctx, func(d *identity.Document) error { return d.AddOperator(carol) }); err != nil {
		t.Fatal(err)
	}
	wb.until("with carol only", func(d *identity.Directory) bool { return has("carol")(d) && len(d.Document().Operators) == 1 })

	// A document of its own, sealed with another token, is refused.
	other, _ := identitySealer("another-token-0123456789abcdef0123", prefix)
	mallory, _ := newOperator(t, "mallory")
	forged := &identity.Document{Operators: []identity.Operator{mallory}}
	plain, _ := json.Marshal(sealedDocument{Gen: uint64(time.Now().Add(time.Hour).UnixNano()), At: time.Now(), Doc: forged.Encode()})
	if _, err := kv.Put(ctx, identitiesKey, other.seal(adOf("identities", prefix, identitiesKey), plain)); err != nil {
		t.Fatal(err)
	}
	wb.refused("do not open with this token")
	if _, ok := b.directory().Operator("mallory"); ok || len(operatorNames(b.directory())) != 1 {
		t.Fatalf("the forged document was believed: %v", operatorNames(b.directory()))
	}
	if _, err := st.Load(ctx); err == nil || !strings.Contains(err.Error(), "do not open") {
		t.Fatalf("the CLI read the forged document: %v", err)
	}
}

// TestIdentitiesLastUse: a front door records when each operator was
// last used, sealed, and the CLI reads it back by the operator's name;
// an older use does not overwrite a later one another door recorded.
func TestIdentitiesLastUse(t *testing.T) {
	prefix := newPrefix()
	a, b := member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix)
	st := openStore(t, prefix, fleetToken)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	alice, _ := newOperator(t, "alice")
	if err := st.Update(ctx, func(d *identity.Document) error { return d.AddOperator(alice) }); err != nil {
		t.Fatal(err)
	}
	later := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	a.Identities(IdentityOptions{}).Used(store.OperatorKey("alice"), later)
	a.flushSeen(ctx)
	b.Identities(IdentityOptions{}).Used(store.OperatorKey("alice"), later.Add(-time.Hour))
	b.flushSeen(ctx)
	d, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := st.Seen(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := seen[store.OperatorKey("alice")]; !got.Equal(later) {
		t.Fatalf("alice last used %v; want %v", got, later)
	}
}

// staleRead is the identities bucket's stream as a server behind its
// leader answers it: the first read of the document gets the message
// captured earlier.
type staleRead struct {
	jetstream.Stream
	captured *jetstream.RawStreamMsg
}

func (s *staleRead) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	if m := s.captured; m != nil {
		s.captured = nil
		return m, nil
	}
	return s.Stream.GetLastMsgForSubject(ctx, subject)
}

// TestIdentitiesStaleRead: a command whose read of the document is
// answered by a server that has not applied the latest change yet (the
// bucket allows direct gets, which any of its servers answers) does not
// write over that change: it reads again and keeps both.
func TestIdentitiesStaleRead(t *testing.T) {
	prefix := newPrefix()
	st, other := openStore(t, prefix, fleetToken), openStore(t, prefix, fleetToken)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	add := func(s *IdentityStore, name string) {
		t.Helper()
		o, _ := newOperator(t, name)
		if err := s.Update(ctx, func(d *identity.Document) error { return d.AddOperator(o) }); err != nil {
			t.Fatal(err)
		}
	}
	add(st, "alice")
	old, err := st.stream.GetLastMsgForSubject(ctx, st.subj)
	if err != nil {
		t.Fatal(err)
	}
	add(other, "bob")
	// A last use written after bob moves the stream's last sequence on,
	// as a front door's does: the stale document is not the stream's
	// last message either.
	if _, err := other.kv.Put(ctx, seenKey(store.OperatorKey("bob")), []byte("not a sealed time")); err != nil {
		t.Fatal(err)
	}
	stale := &staleRead{Stream: st.stream, captured: old}
	st.stream = stale
	add(st, "carol")
	if stale.captured != nil {
		t.Fatal("the command did not read the stale document")
	}
	d, err := other.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range d.Operators {
		got = append(got, o.Name)
	}
	if diff := cmp.Diff([]string{"alice", "bob", "carol"}, got); diff != "" {
		t.Fatalf("operators after a command read a stale document (-want +got):\n%s", diff)
	}
}

// notServedYet is the identities bucket as its servers answer it in the
// moments after it is made: until their direct-get subscriptions reach
// the server a command is connected to, a read gets no responders. Each
// read named in left fails that many more times.
type notServedYet struct {
	jetstream.Stream
	left map[string]int
}

func (s *notServedYet) fail(what string) bool {
	if s.left[what] > 0 {
		s.left[what]--
		return true
	}
	return false
}

func (s *notServedYet) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	if s.fail("get") {
		return nil, nats.ErrNoResponders
	}
	return s.Stream.GetLastMsgForSubject(ctx, subject)
}

func (s *notServedYet) Info(ctx context.Context, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	if s.fail("info") {
		return nil, nats.ErrNoResponders
	}
	return s.Stream.Info(ctx, opts...)
}

type kvNotServedYet struct {
	jetstream.KeyValue
	left *notServedYet
}

func (kv kvNotServedYet) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if kv.left.fail("kv") {
		return nil, nats.ErrNoResponders
	}
	return kv.KeyValue.Get(ctx, key)
}

// TestIdentitiesNotServedYet: a command whose reads of a bucket just
// made get no responders (its servers have not subscribed yet) reads
// again until they answer, as it did to open the store, rather than
// failing the command.
func TestIdentitiesNotServedYet(t *testing.T) {
	prefix := newPrefix()
	st := openStore(t, prefix, fleetToken)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	ns := &notServedYet{Stream: st.stream, left: map[string]int{"get": 2, "info": 2, "kv": 2}}
	st.stream, st.kv = ns, kvNotServedYet{KeyValue: st.kv, left: ns}
	alice, _ := newOperator(t, "alice")
	if err := st.Update(ctx, func(d *identity.Document) error { return d.AddOperator(alice) }); err != nil {
		t.Fatalf("adding alice while the bucket is not served yet: %v", err)
	}
	ns.left["get"] = 2
	d, err := st.Load(ctx)
	if err != nil {
		t.Fatalf("loading while the bucket is not served yet: %v", err)
	}
	if len(d.Operators) != 1 || d.Operators[0].Name != "alice" {
		t.Fatalf("operators %v; want alice", d.Operators)
	}
	if _, err := st.Seen(ctx, d); err != nil {
		t.Fatalf("reading last uses while the bucket is not served yet: %v", err)
	}
	if diff := cmp.Diff(map[string]int{"get": 0, "info": 0, "kv": 0}, ns.left); diff != "" {
		t.Fatalf("reads that were to fail first and did not (-want +got):\n%s", diff)
	}
}

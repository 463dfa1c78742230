package natsplane

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// failedWith returns the refusal m last reported about the identities.
func failedWith(m *Member) string {
	m.ids.mu.Lock()
	defer m.ids.mu.Unlock()
	return m.ids.failed
}

// TestIdentitiesPutBackKeepRevokedOut: someone with only the
// cluster's credentials captures the sealed document while alice is in
// it; alice is revoked; the capture is put back. A running door refuses
// it, a door that starts after the put refuses it too, and the next
// change made with the CLI refuses to build on it (it would seal alice
// back in with a new generation) until told to rebuild, which leaves
// alice out everywhere.
func TestIdentitiesPutBackKeepRevokedOut(t *testing.T) {
	prefix := newPrefix()
	a := member(t, shared.URLs(), prefix)
	wa := watchIdentities(t, a)
	st := openStore(t, prefix, fleetToken)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	alice, cred := newOperator(t, "alice")
	if err := st.Update(ctx, func(d *identity.Document) error { return d.AddOperator(alice) }); err != nil {
		t.Fatal(err)
	}
	wa.until("with alice", has("alice"))
	kv := impostorBucket(t, ctx, prefix)
	captured, err := kv.Get(ctx, identitiesKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(ctx, func(d *identity.Document) error { d.RemoveOperator("alice"); return nil }); err != nil {
		t.Fatal(err)
	}
	wa.until("without alice", func(d *identity.Directory) bool { return !has("alice")(d) })
	if _, err := kv.Put(ctx, identitiesKey, captured.Value()); err != nil {
		t.Fatal(err)
	}
	wa.refused("put back")

	// A door that starts now: Join returns once it has read the bucket.
	late := member(t, shared.URLs(), prefix)
	wl := watchIdentities(t, late)
	if _, err := wl.src.Directory().Authenticate(cred, time.Now()); err == nil {
		t.Errorf("a front door started after the put lets revoked alice in")
	}
	if got := failedWith(late); !strings.Contains(got, "put back") {
		t.Errorf("the door started after the put reported %q, want a refusal saying it was put back", got)
	}
	if _, err := st.Load(ctx); !errors.Is(err, ErrPutBack) {
		t.Errorf("Load of the document put back: %v, want ErrPutBack", err)
	}

	// The next honest change, of someone else, does not build on it.
	bob, _ := newOperator(t, "bob")
	addBob := func(d *identity.Document) error { return d.AddOperator(bob) }
	err = st.Update(ctx, addBob)
	if !errors.Is(err, ErrPutBack) || !strings.Contains(err.Error(), "--rebuild-identities") {
		t.Fatalf("a change on the document put back: %v, want ErrPutBack saying what to do", err)
	}
	st.Rebuild = true
	if err := st.Update(ctx, addBob); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*idWatch{wa, wl} {
		d := w.until("with bob", has("bob"))
		if _, err := d.Authenticate(cred, time.Now()); err == nil {
			t.Errorf("after the rebuild, revoked alice authenticates again")
		}
	}
	st.Rebuild = false
	if d, err := st.Load(ctx); err != nil || has("alice")(identity.NewDirectory(d)) || !has("bob")(identity.NewDirectory(d)) {
		t.Errorf("the document after the rebuild: %v, %v; want bob alone", d, err)
	}
}

// TestIdentityChangesHonestSequence: changes made one after another and
// at once by two commands, interleaved with last uses written on the
// same bucket, are all taken: by a running door, and by a door that
// leaves and starts again; none is mistaken for a document put back.
func TestIdentityChangesHonestSequence(t *testing.T) {
	prefix := newPrefix()
	a := member(t, shared.URLs(), prefix)
	wa := watchIdentities(t, a)
	st1, st2 := openStore(t, prefix, fleetToken), openStore(t, prefix, fleetToken)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()

	const each = 4
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for i, st := range []*IdentityStore{st1, st2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				o, _ := newOperator(t, fmt.Sprintf("op%d-%d", i, j))
				errs <- st.Update(ctx, func(d *identity.Document) error { return d.AddOperator(o) })
				// A last use on the same bucket between changes.
				wa.src.Used(fmt.Sprintf("op%d-%d", i, j), time.Now())
				a.flushSeen(ctx)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	all := func(d *identity.Directory) bool {
		for i := range 2 {
			for j := range each {
				if !has(fmt.Sprintf("op%d-%d", i, j))(d) {
					return false
				}
			}
		}
		return true
	}
	wa.until("with every operator", all)
	// A door that leaves, and starts again after the next change.
	b := member(t, shared.URLs(), prefix)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st1.Update(ctx, func(d *identity.Document) error { d.RemoveOperator("op0-0"); return nil }); err != nil {
		t.Fatal(err)
	}
	wa.until("without op0-0", func(d *identity.Directory) bool { return !has("op0-0")(d) })
	if got := failedWith(a); got != "" {
		t.Errorf("the running door refused an honest document: %s", got)
	}

	// Started again, it takes the latest.
	b = member(t, shared.URLs(), prefix)
	wb := watchIdentities(t, b)
	wb.until("without op0-0 and with op1-3", func(d *identity.Directory) bool { return !has("op0-0")(d) && has("op1-3")(d) })
	if got := failedWith(b); got != "" {
		t.Errorf("the restarted door refused an honest document: %s", got)
	}
	if _, err := st2.Load(ctx); err != nil {
		t.Errorf("Load of an honest document: %v", err)
	}
}

// TestIdentityGenerationKeptAcrossRestart: a front door with a
// generation file refuses, after a restart, a document older than the
// newest it took, even one the placement check cannot tell from an
// honest one (written before documents sealed their revision, and put
// back within putBackSlack); a door without the file has nothing to
// compare with. A file that holds no generation stops the door at start.
func TestIdentityGenerationKeptAcrossRestart(t *testing.T) {
	prefix := newPrefix()
	st := openStore(t, prefix, fleetToken)
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	kv := impostorBucket(t, ctx, prefix)
	// A document with alice as a writer without sealed revisions wrote it.
	alice, cred := newOperator(t, "alice")
	now := time.Now()
	plain, _ := json.Marshal(sealedDocument{Gen: uint64(now.UnixNano()), At: now.UTC(), Doc: (&identity.Document{Operators: []identity.Operator{alice}}).Encode()})
	legacy := st.seal.seal(adOf("identities", prefix, identitiesKey), plain)
	if _, err := kv.Put(ctx, identitiesKey, legacy); err != nil {
		t.Fatal(err)
	}
	genFile := filepath.Join(t.TempDir(), "nats-identities.gen")
	withFile := func(o *Options) { o.GenerationFile = genFile }
	a := member(t, shared.URLs(), prefix, withFile)
	if _, ok := a.directory().Operator("alice"); !ok {
		t.Fatal("the door did not take the document with alice")
	}
	if err := st.Update(ctx, func(d *identity.Document) error { d.RemoveOperator("alice"); return nil }); err != nil {
		t.Fatal(err)
	}
	watchIdentities(t, a).until("without alice", func(d *identity.Directory) bool { return !has("alice")(d) })
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(genFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the generation file's mode is %v; want 0600", fi.Mode().Perm())
	}

	// Put back at once: its put time is within putBackSlack of its
	// sealed time.
	if _, err := kv.Put(ctx, identitiesKey, legacy); err != nil {
		t.Fatal(err)
	}
	again := member(t, shared.URLs(), prefix, withFile)
	if _, err := again.directory().Authenticate(cred, time.Now()); err == nil {
		t.Error("a door restarted with its generation file lets revoked alice in")
	}
	if got := failedWith(again); !strings.Contains(got, "older than") {
		t.Errorf("the restarted door reported %q; want a refusal of an older document", got)
	}
	if _, err := member(t, shared.URLs(), prefix).directory().Authenticate(cred, time.Now()); err != nil {
		t.Errorf("a door without a generation file refused the document put back (%v): then this test does not show what the file does", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.gen")
	if err := os.WriteFile(bad, []byte("not a number"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := proof.NewKey(rand.Reader)
	_, err = Open(ctx, Options{URLs: shared.URLs(), User: clusterUser, Password: clusterPass, Prefix: prefix, Token: fleetToken, Key: key, GenerationFile: bad})
	if err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Open with a generation file holding no number: %v; want an error saying what to do", err)
	}
}

// impostorBucket opens the identities bucket of the plane prefix as
// anyone with the cluster's credentials, but not the fleet's token, can.
func impostorBucket(t *testing.T, ctx context.Context, prefix string) jetstream.KeyValue {
	t.Helper()
	nc, err := nats.Connect(shared.URLs(), nats.UserInfo(clusterUser, clusterPass))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, prefix+"_identities")
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// addOperator is a change that adds an operator with a fresh credential
// and reports the credential.
func addOperator(name string, credential *string) func(*identity.Document) error {
	return func(d *identity.Document) error {
		text, v, err := identity.NewCredential(identity.KindOperator, rand.Reader)
		if err != nil {
			return err
		}
		if credential != nil {
			*credential = text
		}
		return d.AddOperator(identity.Operator{Name: name, Can: identity.Answer, Created: time.Now(), Credential: &v})
	}
}

func TestUpdateWritesHashesOnlyWithMode0600(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	path := Path(dir)
	var cred string
	if err := Update(path, addOperator("alice", &cred)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o; want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %04o; want 0700", di.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), cred) || strings.Contains(string(data), cred[len(identity.PrefixOperator)+identity.IDLen:]) {
		t.Fatalf("the file holds the credential:\n%s", data)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := identity.NewDirectory(d).Authenticate(cred, time.Now()); err != nil {
		t.Errorf("the stored verifier does not authenticate the credential: %v", err)
	}
	// A failed change leaves the file as it was.
	if err := Update(path, func(d *identity.Document) error { d.RemoveOperator("alice"); return fmt.Errorf("no") }); err == nil {
		t.Fatal("a failing change reported no error")
	}
	if again, _ := os.ReadFile(path); string(again) != string(data) {
		t.Errorf("a failed change altered the file")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".identities.json.*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestLoadRefusesWhatOthersCouldReadOrReplace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := Path(dir)
	if err := Update(path, addOperator("alice", nil)); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a 0644 file: %v; want a refusal with the chmod that fixes it", err)
	}
	os.Chmod(path, 0o600)
	os.Chmod(dir, 0o777)
	defer os.Chmod(dir, 0o700)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("a 0777 folder: %v; want a refusal with the chmod that fixes it", err)
	}
	if d, err := Load(filepath.Join(t.TempDir(), FileName)); err != nil || len(d.Operators) != 0 {
		t.Errorf("a missing file: %v, %v; want the empty document", d, err)
	}
}

// TestConcurrentUpdatesLoseNothing: changes made at once, each under the
// lock, all land.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	path := Path(t.TempDir())
	var wg sync.WaitGroup
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Update(path, addOperator(fmt.Sprintf("op%d", i), nil))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := Load(path)
	if err != nil || len(d.Operators) != n {
		t.Fatalf("%d operators, %v; want %d", len(d.Operators), err, n)
	}
}

func TestWatcherFollowsTheFile(t *testing.T) {
	t.Parallel()
	path := Path(t.TempDir())
	loads := make(chan *identity.Directory, 8)
	var errs []error
	w, err := NewWatcher(Options{Path: path, OnLoad: func(d *identity.Directory) { loads <- d }, OnError: func(err error) { errs = append(errs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if !w.Directory().Empty() {
		t.Fatal("a missing file is not the empty directory")
	}
	if w.look(false); len(loads) != 0 {
		t.Fatal("a file still missing was loaded")
	}
	var cred string
	Update(path, addOperator("alice", &cred))
	w.look(false)
	d := <-loads
	if _, err := d.Authenticate(cred, time.Now()); err != nil || w.Directory() != d {
		t.Fatalf("the new directory: %v", err)
	}
	if w.look(false); len(loads) != 0 {
		t.Fatal("an unchanged file was loaded again")
	}
	// A broken file leaves the last good directory, reported once.
	os.WriteFile(path, []byte("{"), 0o600)
	w.look(false)
	w.look(true)
	if len(loads) != 0 || w.Directory() != d {
		t.Fatal("a broken file replaced the directory")
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "stay those last loaded") {
		t.Fatalf("errors %v; want one saying the identities in force stay", errs)
	}
	// Deleting the file revokes everyone.
	os.Remove(path)
	w.look(false)
	if d := <-loads; !d.Empty() {
		t.Fatal("a deleted file is not the empty directory")
	}
}

func TestWatcherRunsUntilCancelledAndWritesLastUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := Path(dir)
	Update(path, addOperator("alice", nil))
	loaded := make(chan struct{}, 1)
	w, err := NewWatcher(Options{Path: path, Interval: time.Millisecond, OnLoad: func(*identity.Directory) { loaded <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	Update(path, addOperator("bob", nil))
	<-loaded // Run found the change on its own
	at := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	w.Used(OperatorKey("alice"), at)
	w.Used(OperatorKey("gone"), at)
	cancel()
	<-done
	seen := LoadSeen(dir)
	if !seen[OperatorKey("alice")].Equal(at) || len(seen) != 1 {
		t.Fatalf("last uses %v; want alice's only (gone has no record)", seen)
	}
}

// TestNewWatcherSeesAChangeWhileItStarts: a revocation that lands while
// NewWatcher reads the file is not lost: the next look loads it, though
// the watcher started with the document from before it. (Not parallel:
// it sets the package's afterRead hook.)
func TestNewWatcherSeesAChangeWhileItStarts(t *testing.T) {
	path := Path(t.TempDir())
	var cred string
	if err := Update(path, addOperator("alice", &cred)); err != nil {
		t.Fatal(err)
	}
	afterRead = func() {
		if err := Update(path, func(d *identity.Document) error { d.RemoveOperator("alice"); return nil }); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterRead = func() {} }()
	w, err := NewWatcher(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	afterRead = func() {}
	w.look(false)
	if _, err := w.Directory().Authenticate(cred, time.Now()); err == nil {
		t.Fatal("alice, revoked while the watcher started, is still in force after its next look")
	}
}

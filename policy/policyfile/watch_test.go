package policyfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	allowAll = "rules:\n  - id: all\n    action: allow\n"
	denyAll  = "rules:\n  - id: none\n    action: deny\n    reason: frozen\n"
	bad      = "rules:\n  - id: none\n    action: deny\n"
)

func write(t *testing.T, path, doc string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// replace writes doc beside path and renames it over path, as editors and
// config managers do.
func replace(t *testing.T, path, doc string) {
	t.Helper()
	tmp := path + ".tmp"
	write(t, tmp, doc)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "reading the policy file") {
		t.Errorf("Load(missing) = %v; want a read error", err)
	}
	write(t, path, bad)
	_, err := Load(path)
	var pe *policy.ParseError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "policy file "+path) {
		t.Errorf("Load(bad) = %v; want a *ParseError naming the file", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("Load(a directory) = %v; want it refused", err)
	}
	write(t, path, allowAll)
	r, err := Load(path)
	if err != nil || r.Policy().Decide(policy.Call{Tool: "x"}).Rule != "all" {
		t.Fatalf("Load(good) = %v", err)
	}
}

// events collects what a watcher reports, for a test to wait on.
type events struct {
	loads  chan string
	errors chan error
}

func newEvents() *events {
	return &events{loads: make(chan string, 10), errors: make(chan error, 10)}
}

func (e *events) options(path string, r *policy.Reloader) Options {
	return Options{Path: path, Reloader: r, Interval: time.Second,
		OnLoad:  func(p *policy.Policy) { e.loads <- p.RuleIDs()[0] },
		OnError: func(err error) { e.errors <- err }}
}

// quiet says nothing was reported.
func (e *events) quiet(t *testing.T) {
	t.Helper()
	select {
	case id := <-e.loads:
		t.Fatalf("unexpected load of %s", id)
	case err := <-e.errors:
		t.Fatalf("unexpected error %v", err)
	default:
	}
}

// after lets d pass on the bubble's clock, then waits until the watcher
// is idle again.
func after(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		write(t, path, allowAll)
		r, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ev := newEvents()
		w, err := NewWatcher(ev.options(path, r))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()

		// Nothing changes: nothing is reported.
		after(3 * time.Second)
		ev.quiet(t)

		// A change loads at the next look.
		replace(t, path, denyAll)
		after(time.Second)
		if id := <-ev.loads; id != "none" {
			t.Fatalf("loaded %s; want the new policy", id)
		}
		if got := r.Policy().Decide(policy.Call{Tool: "x"}); got.Action != policy.Deny {
			t.Fatalf("in force: %s; want the new policy's deny", got.Action)
		}

		// A bad file is reported once, and the last good policy stays.
		replace(t, path, bad)
		after(time.Second)
		err = <-ev.errors
		var pe *policy.ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "the policy in force stays "+r.Policy().Revision()) {
			t.Fatalf("error %v; want a *ParseError saying which policy stays", err)
		}
		after(5 * time.Second)
		ev.quiet(t)
		if r.Policy().RuleIDs()[0] != "none" {
			t.Fatal("a bad file replaced the policy in force")
		}

		// SIGHUP (Check) reports it again, as asked.
		if err := w.Check(); err == nil {
			t.Fatal("Check of a bad file: nil error")
		}
		<-ev.errors

		// A missing file is reported once; the policy stays.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		after(time.Second)
		if err := <-ev.errors; !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("error %v; want the file missing", err)
		}
		after(3 * time.Second)
		ev.quiet(t)

		// The file back with a good policy loads.
		write(t, path, allowAll)
		after(time.Second)
		if id := <-ev.loads; id != "all" {
			t.Fatalf("loaded %s; want all", id)
		}
		// The same bytes written again load nothing new.
		replace(t, path, allowAll)
		after(2 * time.Second)
		ev.quiet(t)
		// A write in place (the same file) loads too.
		write(t, path, denyAll)
		after(time.Second)
		if id := <-ev.loads; id != "none" {
			t.Fatalf("loaded %s after a write in place; want none", id)
		}

		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v; want context.Canceled", err)
		}
	})
}

func TestNewWatcherNeedsOptions(t *testing.T) {
	t.Parallel()
	if _, err := NewWatcher(Options{Path: "x"}); err == nil {
		t.Error("NewWatcher without a Reloader: nil error")
	}
}

// Package testenv decides what a test does when something it needs from the
// machine is missing (the AEP conformance corpora, an npm test peer,
// Chromium): on a developer's machine it skips and says how to get it;
// under CI=true it fails, because CI installs everything and a broken
// install step must not pass as a row of skips.
//
// Its Main is every package's TestMain: the tests run in one temporary
// root per test binary (TempRoot), removed when they end, and goroutines
// they leave running fail the package.
package testenv

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// CI reports whether the tests run under CI (CI=true, as .ci/run sets).
func CI() bool { return os.Getenv("CI") == "true" }

// Missing stops t because what it needs is absent: it fails under CI and
// skips elsewhere. fix says how to get it.
func Missing(t testing.TB, what, fix string) {
	t.Helper()
	if CI() {
		t.Fatalf("%s is missing, and CI=true requires it: %s", what, fix)
	}
	t.Skipf("%s is missing: %s", what, fix)
}

// Main runs a package's tests in a temporary root of their own
// (TempRoot), fails the package when a goroutine a test started is still
// running (go.uber.org/goleak), and removes the root. The keep-alive
// connections of the tests' own HTTP clients are not counted: they belong
// to the test process, not to the code under test (whose server side of
// every connection is counted).
//
// Main returns when nothing failed beyond what m.Run reported, so the
// deferred calls of the TestMain that calls it run and the test binary
// exits with m.Run's code; a leak exits 1 at once.
func Main(m *testing.M) { MainThen(m, nil) }

// MainThen is Main that calls after, when it is not nil, once the tests
// ran and before it looks for goroutines still running: what the tests
// shared (an embedded NATS cluster) stops there.
func MainThen(m *testing.M, after func()) {
	root, err := TempRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if after != nil {
		after()
	}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	leaked := false
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests: %v\n", err)
			leaked = true
		}
	}
	if err := os.RemoveAll(root); err != nil {
		fmt.Fprintf(os.Stderr, "removing the tests' temporary root: %v\n", err)
	}
	if leaked {
		os.Exit(1)
	}
}

// rootOnce makes the temporary root once per test binary.
var rootOnce = sync.OnceValues(makeRoot)

// TempRoot returns the test binary's temporary root, making it on the
// first call: one folder under the system's temporary folder, which
// TMPDIR then names, so t.TempDir, os.MkdirTemp("", …) and the
// temporary files of the processes the tests start all land inside it.
// Main removes it when the tests end. A TestMain that needs a folder
// before Main (to build test peers, say) takes it from here.
func TempRoot() (string, error) { return rootOnce() }

func makeRoot() (string, error) {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	dir, err := os.MkdirTemp("", "aep-"+name+"-test")
	if err != nil {
		return "", fmt.Errorf("making the tests' temporary root: %w", err)
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("pointing TMPDIR at the tests' temporary root: %w", err)
	}
	return dir, nil
}

// LargeSizes are the message sizes the size tests relay each way: 17 MB
// (over the old 16 MiB cap) and 64 MB. Under the race detector, which
// slows byte loops tenfold, the 64 MB case runs only in the uninstrumented
// pass of `go test ./...` (CI runs both passes), and the test logs that
// it was left to that pass.
func LargeSizes(t testing.TB) []int {
	t.Helper()
	if Race {
		t.Logf("the 64 MB case runs in the run without -race; this run relays 17 MB")
		return []int{17_000_000}
	}
	return []int{17_000_000, 64_000_000}
}

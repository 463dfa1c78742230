// Package testenv decides what a test does when something it needs from the
// machine is missing (the AEP conformance corpora, an npm test peer,
// Chromium): on a developer's machine it skips and says how to get it;
// under CI=true it fails, because CI installs everything and a broken
// install step must not pass as a row of skips.
package testenv

import (
	"fmt"
	"net/http"
	"os"
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

// Main runs a package's tests and then fails the package when a goroutine
// a test started is still running (go.uber.org/goleak). The keep-alive
// connections of the tests' own HTTP clients are not counted: they belong
// to the test process, not to the code under test (whose server side of
// every connection is counted).
func Main(m *testing.M) {
	code := m.Run()
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
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

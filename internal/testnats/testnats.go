// Package testnats gives a test binary one embedded three-node JetStream
// cluster (package natsnode), started on the first test that asks for it
// and shared by every test after, each on a plane of its own prefix (as
// fleets share a cluster), so that the suites which run against both
// operator planes pay for one cluster, not one per test.
//
// The package's TestMain stops it (Stop) before looking for leaked
// goroutines. A test that kills or restarts nodes starts a cluster of its
// own (Start).
package testnats

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsnode"
)

// The cluster's credentials: they carry the operator plane and give no
// right over any session.
const (
	User     = "plane"
	Password = "cluster-credentials-not-an-operators"
)

// sharedStore is what each node of the shared cluster lets its planes
// reserve. JetStream reserves a plane's whole store when it is made, and
// a shared cluster keeps every plane until it stops: a run with -count=N
// makes N times the planes. It is accounting, not disk: the files hold
// what the tests write.
const sharedStore = 16 << 30

// startWait bounds starting a cluster: three nodes, their routes and a
// JetStream meta leader.
const startWait = 60 * time.Second

// shared is the binary's cluster, once started.
var shared struct {
	once sync.Once
	cl   *natsnode.Cluster
	dir  string
	err  error
}

// Shared returns the test binary's cluster, starting it on first use.
// Every test that uses it takes a prefix of its own (Prefix), kills no
// node, and bounds its plane's store (natsplane.Options.StoreBytes, 16
// MiB say): JetStream reserves a plane's whole store when it is made, a
// node has sharedStore, and a plane stays until the cluster stops.
func Shared(t testing.TB) *natsnode.Cluster {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "testnats")
		if shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), startWait)
		defer cancel()
		shared.cl, shared.err = natsnode.StartCluster(ctx, natsnode.ClusterOptions{Dir: shared.dir, User: User, Password: Password, MaxStore: sharedStore})
	})
	if shared.err != nil {
		t.Fatalf("starting the shared NATS cluster: %v", shared.err)
	}
	return shared.cl
}

// Stop stops the shared cluster, if a test started it, and removes its
// stores. TestMain calls it after the tests ran.
func Stop() {
	if shared.cl != nil {
		shared.cl.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

// Start starts a cluster of the test's own, stopped when it ends (after
// what the test started later: cleanups run last first), for a test that
// kills or restarts nodes.
func Start(t testing.TB) *natsnode.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	cl, err := natsnode.StartCluster(ctx, natsnode.ClusterOptions{Dir: t.TempDir(), User: User, Password: Password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	return cl
}

var prefixes atomic.Int64

// Prefix names a fresh plane on a shared cluster.
func Prefix() string { return fmt.Sprintf("t%d", prefixes.Add(1)) }

// Logger returns a logger that writes what is at level or above to the
// test's log (shown when it fails, or with -v), until the test ends: a
// plane member's logs outlive no test.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop) // registered before the member's Close: runs after it
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// testWriter writes to a test's log until stopped.
type testWriter struct {
	t testing.TB
	// mu guards done.
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

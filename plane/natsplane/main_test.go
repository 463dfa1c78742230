package natsplane

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsnode"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// shared is the three-node cluster the tests that kill no node share,
// each under a prefix of its own (as fleets share a cluster).
var shared *natsnode.Cluster

// Test credentials of the cluster: what an impostor is given too.
const (
	clusterUser = "plane"
	clusterPass = "cluster-credentials-not-an-operators"
	fleetToken  = "fleet-token-0123456789abcdef0123456789"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "natsplane")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	// Every plane made keeps its reservation (Options.StoreBytes) until
	// the cluster stops, and a run with -count=N makes N times the
	// planes: the nodes' storage is sized for many runs. It is
	// accounting, not disk.
	shared, err = natsnode.StartCluster(ctx, natsnode.ClusterOptions{Dir: dir, User: clusterUser, Password: clusterPass, MaxStore: 16 << 30})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	shared.Stop()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var prefixes atomic.Int64

// newPrefix names a fresh plane on a shared cluster.
func newPrefix() string { return fmt.Sprintf("t%d", prefixes.Add(1)) }

// testHeartbeat is short, so a member killed is gone within a few
// seconds, and long enough that a member slowed by the race detector
// keeps beating, and that a front door finds a consumer lost with a
// server (two of its idle heartbeats, the shortest JetStream's clients
// take, 0.5s) well within the three heartbeats a member may miss.
const testHeartbeat = time.Second

// member opens a member of the plane prefix on the cluster at urls.
func member(t *testing.T, urls, prefix string, tweak ...func(*Options)) *Member {
	t.Helper()
	key, err := proof.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{URLs: urls, User: clusterUser, Password: clusterPass, Prefix: prefix, Token: fleetToken, Key: key,
		Agent: "aep-mcp-bridge", Instance: "test", Heartbeat: testHeartbeat, StoreBytes: 16 << 20,
		Logger: testLogger(t, key.Fingerprint()[:6])}
	for _, f := range tweak {
		f(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), planetest.Wait)
	defer cancel()
	m, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Logf("closing a member: %v", err)
		}
	})
	return m
}

// testLogger sends a member's logs, debug ones included, to the test's
// log (shown when it fails, or with -v) until the test ends.
func testLogger(t *testing.T, member string) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop) // registered before the member's Close: runs after it
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})).With("member", member)
}

// testWriter writes to a test's log until stopped.
type testWriter struct {
	t *testing.T
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

// door is a member as the contract suite drives it.
func door(m *Member) planetest.Door {
	return planetest.Door{Member: m, SessionID: func() string { return m.key.SessionID(aep.NewID()) }}
}

// doors opens n members of a fresh plane on the cluster at urls.
func doors(t *testing.T, urls string, n int) []planetest.Door {
	prefix := newPrefix()
	out := make([]planetest.Door, n)
	for i := range out {
		out[i] = door(member(t, urls, prefix))
	}
	return out
}

// TestClusterContract runs the plane's contract on three members of a
// plane on a three-node cluster, every stream and bucket with three
// replicas.
func TestClusterContract(t *testing.T) {
	planetest.Run(t, func(t *testing.T, n int) []planetest.Door { return doors(t, shared.URLs(), n) })
}

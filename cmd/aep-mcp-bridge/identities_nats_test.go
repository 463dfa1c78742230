package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsnode"
)

// TestOperatorsOnTheNATSPlane: with --nats, operators add, list and
// revoke keep the records on the operator plane, which every front door
// follows. An operator added through one NATS node opens door B, whose
// state folder never saw it; a revocation through a third node closes
// its WebSockets on doors A and B, and its next request is refused. The
// cluster holds neither the credential nor its verifier in clear, and a
// command without the fleet's token can neither read nor change the
// records. The gateways' named clients, in the same records, follow the
// same way.
func TestOperatorsOnTheNATSPlane(t *testing.T) {
	t.Parallel()
	bin := bridgeBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	urlOf := natsFleet(t, ctx, dir)
	const token = "fleet-token-0123456789abcdefghijklmnop"
	// The CLI runs with a state folder of its own: nothing it does may
	// depend on one.
	cliState := filepath.Join(dir, "cli")
	onPlane := func(i int, tok string) []string {
		return []string{"--nats", urlOf(i), "--nats-prefix", "ops", "--token", tok, "--state-dir", cliState}
	}
	var doors, mcpURLs []string
	var logs []*lockedBuffer
	for i := range 3 {
		p := startProcess(t, bin, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--agent", fmt.Sprintf("door%d", i),
			"--nats", urlOf(i), "--nats-prefix", "ops", "--token", token, "--mcp-token", "fleet-mcp-token-0123456789abcdefghijklm",
			"--state-dir", filepath.Join(dir, fmt.Sprint(i)), "--log-dir", "off", "--", bin, "demo-server")
		doors = append(doors, p.stderr.boundAddr(t, "AEP endpoint on http://"))
		mcpURLs = append(mcpURLs, "http://"+p.stderr.boundAddr(t, "MCP gateway on http://")+"/mcp")
		logs = append(logs, p.stderr)
	}

	// Added through node 1, machine A's.
	out, errOut, code := cli(t, append([]string{"operators", "add", "alice", "--can", "read"}, onPlane(0, token)...)...)
	if code != 0 {
		t.Fatalf("operators add --nats: exit %d: %s", code, errOut)
	}
	cred := strings.TrimSpace(out)
	if !strings.Contains(errOut, `the operator plane "ops"`) || strings.Contains(errOut, "fleet-cluster-password") || strings.Contains(errOut, cred) {
		t.Fatalf("operators add --nats said: %s", errOut)
	}
	// Every door reads it; door B, whose state folder never held it,
	// opens to it.
	for _, l := range logs {
		l.waitFor(t, "operators=1")
	}
	alice := []*opConn{dialOp(t, doors[0], cred, "alice-on-a"), dialOp(t, doors[1], cred, "alice-on-b")}

	// list, through node 2, shows her; with another token it reads
	// nothing, and changes nothing.
	out, errOut, code = cli(t, append([]string{"operators", "list", "--json"}, onPlane(1, token)...)...)
	var listed []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0]["name"] != "alice" || listed[0]["can"] != "read" {
		t.Fatalf("operators list --nats (exit %d): %s %s", code, out, errOut)
	}
	wrong := "another-token-0123456789abcdefghijklmnop"
	for _, args := range [][]string{{"operators", "list"}, {"operators", "add", "mallory"}, {"operators", "revoke", "alice"}} {
		_, errOut, code = cli(t, append(args, onPlane(1, wrong)...)...)
		if code == 0 || !strings.Contains(errOut, "do not open with this token") {
			t.Fatalf("%v with another token: exit %d: %s", args, code, errOut)
		}
	}

	// The cluster's credentials read ciphertext: neither the name nor
	// the credential's public id is in the bucket.
	raw := bucketValue(t, ctx, urlOf(2), "ops_identities", "doc")
	p, err := identity.ParseCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("alice")) || bytes.Contains(raw, []byte(p.ID)) {
		t.Fatalf("the identities bucket holds the records in clear: %q", raw)
	}

	// Revoked through node 3, machine C's: her WebSockets on A and B
	// close, saying why. (The document with her is kept, as anyone with
	// the cluster's credentials could, to be put back later.)
	emptied := make([]int, len(logs)) // each door's reloads to no operators so far
	for i, l := range logs {
		emptied[i] = strings.Count(l.String(), "operators=0")
	}
	if _, errOut, code := cli(t, append([]string{"operators", "revoke", "alice"}, onPlane(2, token)...)...); code != 0 {
		t.Fatalf("operators revoke --nats: %s", errOut)
	}
	revoked := time.Now()
	guard := time.After(20 * time.Second)
	for i, c := range alice {
		select {
		case <-c.ended:
			if f := c.sawAny(`"type":"closing"`); !strings.Contains(f, "access revoked") {
				t.Errorf("alice's WebSocket on door %d closed without saying why: %q", i, f)
			}
		case <-guard:
			t.Fatalf("alice's WebSocket on door %d was still open 20s after the revocation", i)
		}
	}
	t.Logf("alice's WebSockets on doors A and B closed %v after the revocation returned", time.Since(revoked).Round(time.Millisecond))
	// Each door learns of the revocation from its own watch of the
	// plane: door C, where alice holds no connection, is asked once it
	// has said so (it logs a reload once its endpoint took it).
	for i, l := range logs {
		waitCount(t, l, "operators=0", emptied[i]+1)
	}
	refusedEverywhere(t, doors, cred, "alice's next request")
	if out, _, code := cli(t, append([]string{"operators", "list"}, onPlane(0, token)...)...); code != 0 || !strings.Contains(out, "no named operators") {
		t.Errorf("operators list after the revocation (exit %d): %s", code, out)
	}

	// The document with alice, put back with the cluster's credentials:
	// no command builds on it, each saying what happened and what to do;
	// --rebuild-identities starts afresh, and alice stays out.
	putBucketValue(t, ctx, urlOf(2), "ops_identities", "doc", raw)
	for _, args := range [][]string{{"operators", "list"}, {"operators", "add", "carol"}} {
		_, errOut, code := cli(t, append(args, onPlane(1, token)...)...)
		if code == 0 || !strings.Contains(errOut, "put back") || !strings.Contains(errOut, "credentials") || !strings.Contains(errOut, "--rebuild-identities") {
			t.Fatalf("%v on the document put back: exit %d: %s", args, code, errOut)
		}
	}
	if _, errOut, code := cli(t, append([]string{"operators", "add", "carol", "--rebuild-identities"}, onPlane(1, token)...)...); code != 0 {
		t.Fatalf("operators add --rebuild-identities: exit %d: %s", code, errOut)
	}
	for _, l := range logs {
		l.waitFor(t, "put back")
		waitCount(t, l, "operators=1", 2)
	}
	refusedEverywhere(t, doors, cred, "alice's request after the put and the rebuild")

	// The gateways' named clients share the records: one added through
	// node 1 opens gateway B; revoked through node 3, it is refused.
	out, errOut, code = cli(t, append([]string{"clients", "add", "bob"}, onPlane(0, token)...)...)
	if code != 0 {
		t.Fatalf("clients add --nats: exit %d: %s", code, errOut)
	}
	bob := strings.TrimSpace(out)
	// The gateway hands out the records in the order they were written:
	// the next reload after the one with bob is his revocation.
	logs[1].waitFor(t, "clients=1")
	reloads := strings.Count(logs[1].String(), "named clients reloaded")
	if got := initializeStatus(t, ctx, mcpURLs[1], bob); got != http.StatusOK {
		t.Fatalf("bob's initialize on gateway B: %d; want 200", got)
	}
	if _, errOut, code := cli(t, append([]string{"clients", "revoke", "bob"}, onPlane(2, token)...)...); code != 0 {
		t.Fatalf("clients revoke --nats: %s", errOut)
	}
	waitCount(t, logs[1], "named clients reloaded", reloads+1)
	if got := initializeStatus(t, ctx, mcpURLs[1], bob); got != http.StatusUnauthorized {
		t.Fatalf("bob's initialize on gateway B after the revocation: %d; want 401", got)
	}
}

// refusedEverywhere checks that every door refuses the credential cred.
func refusedEverywhere(t *testing.T, doors []string, cred, what string) {
	t.Helper()
	for i, d := range doors {
		req, _ := http.NewRequest("GET", "http://"+d+"/stream?live=0", nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s on door %d: %d; want 401", what, i, resp.StatusCode)
		}
	}
}

// waitCount waits until l holds s at least n times, and returns how
// many times it does.
func waitCount(t *testing.T, l *lockedBuffer, s string, n int) int {
	t.Helper()
	guard := time.After(20 * time.Second)
	for {
		ch := l.Changed()
		if c := strings.Count(l.String(), s); c >= n {
			return c
		}
		select {
		case <-ch:
		case <-guard:
			t.Fatalf("%q not %d times within 20s:\n%s", s, n, l.String())
		}
	}
}

// bucketValue reads key of bucket as anyone with the cluster's
// credentials can.
func bucketValue(t *testing.T, ctx context.Context, url, bucket, key string) []byte {
	t.Helper()
	e, err := openBucket(t, ctx, url, bucket).Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return e.Value()
}

// putBucketValue puts value under key of bucket as anyone with the
// cluster's credentials can.
func putBucketValue(t *testing.T, ctx context.Context, url, bucket, key string, value []byte) {
	t.Helper()
	if _, err := openBucket(t, ctx, url, bucket).Put(ctx, key, value); err != nil {
		t.Fatal(err)
	}
}

// openBucket opens bucket as anyone with the cluster's credentials can,
// until the test ends.
func openBucket(t *testing.T, ctx context.Context, url, bucket string) jetstream.KeyValue {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// natsFleet starts a three-node NATS cluster with JetStream in dir,
// stopped when the test ends (after the processes started later), and
// returns the URL of each node with the cluster's credentials in it.
func natsFleet(t *testing.T, ctx context.Context, dir string) func(i int) string {
	t.Helper()
	cl, err := natsnode.StartCluster(ctx, natsnode.ClusterOptions{Dir: filepath.Join(dir, "nats"), User: "fleet", Password: "fleet-cluster-password"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop) // after the processes stop: cleanups run last first
	return func(i int) string {
		return strings.Replace(cl.Node(i).URL(), "nats://", "nats://fleet:fleet-cluster-password@", 1)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsnode"
)

// TestNATSFlagsReachTheHost: --nats and its flags put the operator plane
// on NATS for the bridge and for serve, with the token loaded even with
// --listen off (commands between processes are sealed with it); flags
// that make no sense are refused before anything starts, and a password
// in a URL is not echoed.
func TestNATSFlagsReachTheHost(t *testing.T) {
	t.Parallel()
	tok := strings.Repeat("t", 32)
	dir := t.TempDir()
	creds := filepath.Join(dir, "plane.creds")
	if err := os.WriteFile(creds, []byte("not read until connecting"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		prefix  string // "" for no plane on NATS
		refused string
	}{
		{name: "no --nats", args: nil},
		{name: "--nats", args: []string{"--nats", "nats://n1:4222,nats://n2:4222"}, prefix: "aep"},
		{name: "--nats-prefix", args: []string{"--nats", "nats://n1:4222", "--nats-prefix", "team-b", "--nats-creds", creds}, prefix: "team-b"},
		{name: "creds without --nats", args: []string{"--nats-creds", creds}, refused: "--nats-creds and --nats-tls-* go with --nats URL"},
		{name: "a missing creds file", args: []string{"--nats", "nats://n1:4222", "--nats-creds", filepath.Join(dir, "none")}, refused: "--nats-creds:"},
		{name: "a prefix with a dot", args: []string{"--nats", "nats://n1:4222", "--nats-prefix", "a.b"}, refused: `--nats-prefix "a.b"`},
		{name: "a cert without its key", args: []string{"--nats", "nats://n1:4222", "--nats-tls-cert", creds}, refused: "--nats-tls-cert and --nats-tls-key go together"},
		{name: "a CA file that is no PEM", args: []string{"--nats", "nats://n1:4222", "--nats-tls-ca", creds}, refused: "no PEM certificate"},
		{name: "a space in the list", args: []string{"--nats", "nats://u:secret-pass@n1:4222, ,nats://n2"}, refused: "://[redacted]@n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"--listen", "off", "--token", tok, "--state-dir", t.TempDir(), "--log-dir", "off"}, tc.args...)
			c, err := parseFlags(append(args, "--", "true"), stdio{out: io.Discard, err: &stderr})
			if err != nil {
				t.Fatalf("parseFlags: %v\n%s", err, stderr.String())
			}
			ho, _, err := c.options(&stderr)
			if strings.Contains(stderr.String(), "secret-pass") {
				t.Fatalf("a NATS password was printed: %s", stderr.String())
			}
			if tc.refused != "" {
				if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), tc.refused) {
					t.Fatalf("got %v, %q; want a usage error saying %q", err, stderr.String(), tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("options: %v\n%s", err, stderr.String())
			}
			switch {
			case tc.prefix == "" && ho.NATS != nil:
				t.Fatalf("a plane on NATS without --nats: %+v", ho.NATS)
			case tc.prefix != "" && (ho.NATS == nil || ho.NATS.Prefix != tc.prefix || ho.Token != tok):
				t.Fatalf("NATS %+v, token set %v; want prefix %q and the token", ho.NATS, ho.Token != "", tc.prefix)
			}
		})
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, nil, &help, io.Discard); exitCode(err) != 0 {
		t.Fatal(err)
	}
	for _, f := range []string{"-nats ", "-nats-creds", "-nats-prefix", "-nats-tls-ca", "-nats-tls-cert", "-nats-tls-key"} {
		if !strings.Contains(help.String(), f) {
			t.Errorf("serve does not take %s", f)
		}
	}
}

// TestGatewayFleetOnNATS runs three gateway processes, each given one
// node of a three-node JetStream cluster with --nats: a client of the
// third asks, the operator answers on the first's endpoint, and the
// answer reaches the third's server.
func TestGatewayFleetOnNATS(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "aep-mcp-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the binary: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := natsnode.StartCluster(ctx, natsnode.ClusterOptions{Dir: filepath.Join(dir, "nats"), User: "fleet", Password: "fleet-cluster-password"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop) // after the processes stop: cleanups run last first
	const token, mcpToken = "fleet-token-0123456789abcdefghijklmnop", "fleet-mcp-token-0123456789abcdefghijklm"
	var endpoints, mcpURLs []string
	for i := range cl.Len() {
		url := strings.Replace(cl.Node(i).URL(), "nats://", "nats://fleet:fleet-cluster-password@", 1)
		p := startProcess(t, bin, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--agent", fmt.Sprintf("gw%d", i),
			"--nats", url, "--nats-prefix", "cmdfleet", "--token", token, "--mcp-token", mcpToken,
			"--state-dir", filepath.Join(dir, fmt.Sprint(i)), "--log-dir", "off", "--route", "remote", "--", bin, "demo-server")
		endpoints = append(endpoints, "http://"+p.stderr.boundAddr(t, "AEP endpoint on http://"))
		mcpURLs = append(mcpURLs, "http://"+p.stderr.boundAddr(t, "MCP gateway on http://")+"/mcp")
		if strings.Contains(p.stderr.String(), "fleet-cluster-password") {
			t.Fatalf("gateway %d logged the cluster's password", i)
		}
	}
	got := make(chan string, 1)
	go func() {
		r, err := deployThrough(ctx, mcpURLs[2], mcpToken, "client-of-c")
		if err != nil {
			r = "error: " + err.Error()
		}
		got <- r
	}()
	op := &operator.Client{Endpoint: endpoints[0], Token: token, Agent: "fleet-operator"}
	q := operator.StreamOptions{Filter: json.RawMessage(`{"type":["attention.requested"]}`), From: aep.FromAll}
	err = op.Stream(ctx, q, func(ev *aep.Event, _ []byte) bool {
		ack, err := op.Respond(ctx, operator.Question{ID: ev.ID, Session: ev.Session}, aep.Answer{Values: map[string]any{"service": "svc-across"}}, 30*time.Second, nil)
		if err != nil || !ack.Accepted {
			t.Errorf("answering on gateway A a question of gateway C: %v %+v", err, ack)
		}
		return false
	})
	if err != nil {
		t.Fatalf("gateway A's stream: %v", err)
	}
	select {
	case r := <-got:
		if !strings.Contains(r, `"service":"svc-across"`) {
			t.Fatalf("gateway C's server received %s; want the answer sent on gateway A", r)
		}
	case <-ctx.Done():
		t.Fatal("no result at gateway C's client")
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// process is a running aep-mcp-bridge process.
type process struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
}

// startProcess runs the binary with args until the test ends, then stops
// it with SIGINT as a user would.
func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, nil, bin, args...)
}

// startProcessEnv is startProcess with env added to the environment.
func startProcessEnv(t *testing.T, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), stderr: &lockedBuffer{}}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			p.cmd.Process.Kill()
			t.Errorf("%v did not stop on SIGINT", args)
		}
		if t.Failed() {
			t.Logf("stderr of %v:\n%s", args, p.stderr.String())
		}
	})
	return p
}

// TestGatewayFleet runs the README's fleet: a hub, a gateway that joins
// it on the hub's port, and one that links to it with --relay. A client
// of each gateway asks a question; the operator answers both through the
// hub's endpoint, and each answer reaches its own gateway's server.
func TestGatewayFleet(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "aep-mcp-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the binary: %v\n%s", err, out)
	}
	common := []string{"--token", "fleet-token-0123456789abcdefghijklmnop", "--mcp-token", "fleet-mcp-token-0123456789abcdefghijklm", "--state-dir", dir, "--log-dir", "off", "--route", "remote"}
	upstream := []string{"--", bin, "demo-server"}
	hub := startProcess(t, bin, append(append([]string{"serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--agent", "hub"}, common...), upstream...)...)
	hubAddr := hub.stderr.boundAddr(t, "AEP endpoint on http://")
	gateways := map[string]string{} // client name → MCP URL
	for name, link := range map[string][]string{
		"fleet-joined":  {"--listen", hubAddr},
		"fleet-relayed": {"--listen", "off", "--relay", "ws://" + hubAddr + "/socket"},
	} {
		args := append(append(append([]string{"serve", "--mcp-listen", "127.0.0.1:0", "--agent", name}, link...), common...), upstream...)
		p := startProcess(t, bin, args...)
		mcpAddr := p.stderr.boundAddr(t, "MCP gateway on http://")
		gateways[name] = "http://" + mcpAddr + "/mcp"
	}

	op := &operator.Client{Endpoint: "http://" + hubAddr, Token: "fleet-token-0123456789abcdefghijklmnop", Agent: "fleet-operator"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, u := range gateways {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := deployThrough(ctx, u, "fleet-mcp-token-0123456789abcdefghijklm", name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				got = "error: " + err.Error()
			}
			results[name] = got
		}()
	}
	// The operator watches the hub: every gateway's sessions and questions
	// are there, each session named by its client.
	clients := map[string]string{}
	answered := 0
	q := operator.StreamOptions{Filter: json.RawMessage(`{"type":["attention.requested","session.started"]}`), From: aep.FromAll}
	err := op.Stream(ctx, q, func(ev *aep.Event, _ []byte) bool {
		switch ev.Type {
		case "session.started":
			var d struct {
				Client struct{ Name string } `json:"client"`
			}
			json.Unmarshal(ev.Data, &d)
			clients[ev.Session] = d.Client.Name
		case "attention.requested":
			name := clients[ev.Session]
			if _, ok := gateways[name]; !ok {
				t.Errorf("a question in session %s of client %q", ev.Session, name)
				return false
			}
			ack, err := op.Respond(ctx, operator.Question{ID: ev.ID, Session: ev.Session},
				aep.Answer{Values: map[string]any{"service": "svc-" + name}}, 30*time.Second, nil)
			if err != nil || !ack.Accepted {
				t.Errorf("answering %s's question through the hub: %v %+v", name, err, ack)
				return false
			}
			answered++
		}
		return answered < len(gateways)
	})
	if err != nil {
		t.Fatalf("the hub's stream: %v", err)
	}
	wg.Wait()
	for name := range gateways {
		if want := `"service":"svc-` + name + `"`; !strings.Contains(results[name], want) {
			t.Errorf("%s's server received %s; want %s", name, results[name], want)
		}
	}
}

// deployThrough calls the demo server's deploy tool through the gateway
// at mcpURL, with its client token, as client name, and returns what the
// server received.
func deployThrough(ctx context.Context, mcpURL, token, name string) (string, error) {
	tr, err := transport.NewStreamableHTTP(mcpURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return "", err
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return "", err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "deploy"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), nil
}

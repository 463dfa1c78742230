package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// addClient runs clients add and returns the credential it printed.
func addClient(t *testing.T, state string, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, append(append([]string{"clients", "add"}, args...), "--state-dir", state)...)
	if code != 0 {
		t.Fatalf("clients add %v: exit %d: %s", args, code, errOut)
	}
	cred := strings.TrimSpace(out)
	if _, err := identity.ParseCredential(cred); err != nil || !strings.HasPrefix(cred, identity.PrefixClient) {
		t.Fatalf("clients add printed %q; want one client credential line", out)
	}
	if strings.Contains(errOut, cred) {
		t.Fatalf("clients add printed the credential on stderr too")
	}
	return cred
}

func TestClientsCommand(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	cred := addClient(t, state, "ci-deploy", "--servers", "deploy-*", "--servers", "billing", "--expires", "30d")
	addClient(t, state, "laptop")
	out, _, code := cli(t, "clients", "list", "--state-dir", state)
	if code != 0 || !regexp.MustCompile(`ci-deploy\s+deploy-\*,billing\s+\S+ \S+\s+-\s+\S+ \S+`).MatchString(out) ||
		!regexp.MustCompile(`laptop\s+\*\s+\S+ \S+\s+-\s+-`).MatchString(out) || strings.Contains(out, cred) {
		t.Fatalf("clients list (exit %d):\n%s", code, out)
	}
	out, _, _ = cli(t, "clients", "list", "--json", "--state-dir", state)
	var list []map[string]any
	if json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0]["expires"] == nil || list[1]["expires"] != nil || strings.Contains(out, "hash") || strings.Contains(out, "credential") {
		t.Fatalf("clients list --json:\n%s", out)
	}
	if out, _, _ := cli(t, "operators", "list", "--state-dir", state); strings.Contains(out, "ci-deploy") {
		t.Errorf("a client is listed among the operators:\n%s", out)
	}
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no subcommand", []string{"clients"}, exitUsage, "give a subcommand"},
		{"an unknown subcommand", []string{"clients", "rename"}, exitUsage, `"rename" is not a subcommand`},
		{"no name", []string{"clients", "add"}, exitUsage, "give the client's NAME"},
		{"a bad name", []string{"clients", "add", "a b"}, exitUsage, "use letters, digits"},
		{"a bad glob", []string{"clients", "add", "x", "--servers", "[a"}, exitUsage, "--servers: server pattern"},
		{"a past expiry", []string{"clients", "add", "x", "--expires", "2001-01-01"}, exitUsage, "not in the future"},
		{"an operator's flag", []string{"clients", "add", "x", "--can", "read"}, exitUsage, "flag provided but not defined: -can"},
		{"a name taken", []string{"clients", "add", "laptop"}, exitFailure, `a client named "laptop" exists`},
		{"revoking nobody", []string{"clients", "revoke", "nobody"}, exitFailure, `no client is named "nobody"`},
		{"a stray argument", []string{"clients", "revoke", "laptop", "ci"}, exitUsage, `unexpected argument "ci"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if len(args) > 1 {
				args = append(args, "--state-dir", state)
			}
			_, errOut, code := cli(t, args...)
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Fatalf("exit %d, %q; want %d saying %q", code, errOut, tc.code, tc.says)
			}
		})
	}
	if _, _, code := cli(t, "clients", "revoke", "laptop", "--state-dir", state); code != 0 {
		t.Fatalf("revoke: exit %d", code)
	}
	if out, _, _ := cli(t, "clients", "list", "--state-dir", state); strings.Contains(out, "laptop") || !strings.Contains(out, "ci-deploy") {
		t.Errorf("after revoking laptop:\n%s", out)
	}
	for _, args := range [][]string{{"clients", "--help"}, {"help", "clients"}, {"clients", "add", "--help"}} {
		if out, _, code := cli(t, args...); code != 0 || !strings.Contains(out, "usage: aep-mcp-bridge clients") {
			t.Errorf("%v: exit %d:\n%s", args, code, out)
		}
	}
}

// initializeAs initializes an mcp-go streamable HTTP session at mcpURL
// with credential as its bearer.
func initializeAs(ctx context.Context, mcpURL, credential string) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(mcpURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + credential}))
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// initializeStatus POSTs an initialize with credential as its bearer and
// returns the HTTP status.
func initializeStatus(t *testing.T, ctx context.Context, mcpURL, credential string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+credential)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeWithNamedClients: clients added on the command line open a
// running serve process, each within its scope; revoking one on the
// command line ends its session and refuses its next request; neither
// credential is ever on serve's stderr.
func TestServeWithNamedClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	state := filepath.Join(dir, "state")
	deployer := addClient(t, state, "deployer", "--servers", "deploy-*")
	biller := addClient(t, state, "biller", "--servers", "billing")
	env := []string{"AEP_TOKEN=" + opsToken, "AEP_MCP_TOKEN=" + opsMCPToken}
	gw := startProcessEnv(t, env, bin, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--name", "deploy-web",
		"--state-dir", state, "--log-dir", filepath.Join(dir, "logs"), "--log-level", "debug", "--", bin, "demo-server")
	mcpURL := "http://" + addrOf(t, gw, "MCP gateway") + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c, err := initializeAs(ctx, mcpURL, deployer)
	if err != nil {
		t.Fatalf("the deployer on deploy-web: %v", err)
	}
	defer c.Close()
	if tools, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil || len(tools.Tools) == 0 {
		t.Fatalf("the deployer's tools/list: %v, %v", tools, err)
	}
	if code := initializeStatus(t, ctx, mcpURL, biller); code != http.StatusForbidden {
		t.Errorf("the biller on deploy-web: %d; want 403", code)
	}
	if _, _, code := cli(t, "clients", "revoke", "deployer", "--state-dir", state); code != 0 {
		t.Fatalf("clients revoke: exit %d", code)
	}
	gw.stderr.waitFor(t, "ending a session of a client whose access was revoked")
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err == nil {
		t.Error("the revoked deployer's session still answers")
	}
	if code := initializeStatus(t, ctx, mcpURL, deployer); code != http.StatusUnauthorized {
		t.Errorf("the revoked deployer's initialize: %d; want 401", code)
	}
	logs := gw.stderr.String()
	if strings.Contains(logs, deployer) || strings.Contains(logs, biller) {
		t.Fatal("a client credential is on serve's stderr")
	}
	if !strings.Contains(logs, "client=deployer") {
		t.Errorf("serve's log never names the deployer:\n%s", logs)
	}
}

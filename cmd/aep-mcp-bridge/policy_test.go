package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const goodPolicy = "rules:\n  - {id: no-drop, tool: 'drop_*', action: deny, reason: no}\n"

// TestPolicyFileStartAndReload runs the binary with --policy: a file that
// does not load stops the start, with the line and what to fix; a running
// bridge reloads on SIGHUP, keeps the last good policy when the new file
// is broken (and says why), and SIGHUP no longer ends it.
func TestPolicyFileStartAndReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	path := filepath.Join(dir, "policy.yaml")
	os.WriteFile(path, []byte("rules:\n  - {id: x, tool: echo, action: maybe}\n"), 0o600)
	out, err := exec.Command(bin, "serve", "--mcp-listen", "127.0.0.1:0", "--mcp-auth", "none", "--listen", "off",
		"--state-dir", dir, "--policy", path, "--", "cat").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("a bridge with a bad policy started: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "policy.yaml") || !strings.Contains(string(out), "action") {
		t.Fatalf("the start error does not name the file and the field:\n%s", out)
	}

	os.WriteFile(path, []byte(goodPolicy), 0o600)
	p := startProcess(t, bin, "serve", "--mcp-listen", "127.0.0.1:0", "--mcp-auth", "none", "--listen", "off",
		"--state-dir", dir, "--policy", path, "--", "cat")
	p.stderr.waitFor(t, "MCP gateway on http://")
	if !strings.Contains(p.stderr.String(), "approval policy loaded") {
		t.Fatalf("no policy loaded line:\n%s", p.stderr.String())
	}
	os.WriteFile(path, []byte("rules: [\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.stderr.waitFor(t, "SIGHUP: reloading the approval policy")
	p.stderr.waitFor(t, "the last good policy stays in force")
	os.WriteFile(path, []byte(goodPolicy+"  - {id: ask-deploy, tool: deploy, action: ask, approvers: [alice]}\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	// A bridge that SIGHUP ended would stop its watcher before this.
	p.stderr.waitFor(t, "approval policy reloaded")
	if strings.Contains(p.stderr.String(), "shutting down") {
		t.Fatalf("SIGHUP ended the bridge; with --policy it reloads:\n%s", p.stderr.String())
	}
}

// TestApproveAndDenyCommands runs a gateway whose policy holds the demo
// server's deploy tool for two approvers, and drives it with the CLI as
// named operators: pending lists the permission request, approve counts
// each operator once and refuses one who is no approver, and deny ends a
// call with the reason the client then reads.
func TestApproveAndDenyCommands(t *testing.T) {
	t.Parallel()
	g := startPolicyGateway(t, "rules:\n  - {id: two-deploy, tool: deploy, action: ask, approvers: [alice, carol], approvals: 2}\n",
		map[string][]string{"alice": nil, "carol": nil, "bob": nil})
	creds, endpoint, mcpAddr, holder := g.creds, g.endpoint, g.mcpAddr, g.holder
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	call := func() chan string {
		ch := make(chan string, 1)
		go func() {
			got, err := deployThrough(ctx, "http://"+mcpAddr+"/mcp", opsMCPToken, "agent")
			if err != nil {
				got = "error: " + err.Error()
			}
			ch <- got
		}()
		return ch
	}
	askedFor := func(kind string) string {
		f := holder.await("a "+kind+" request", func(f map[string]any) bool {
			return f["type"] == "attention.requested" && dataOf(f)["kind"] == kind
		})
		return f["id"].(string)
	}
	op := func(who string, args ...string) (string, string, int) {
		return cli(t, append(args, "--endpoint", endpoint, "--token", creds[who])...)
	}

	first := call()
	id := askedFor("permission")
	out, errOut, code := op("alice", "pending")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "permission") || !strings.Contains(out, "deploy") {
		t.Fatalf("pending (exit %d): %s %s; want the permission request for deploy", code, out, errOut)
	}
	if _, errOut, code := op("bob", "approve", id); code != exitRejected || !strings.Contains(errOut, "not an approver") {
		t.Errorf("bob's approve: exit %d %s; want rejected, not an approver", code, errOut)
	}
	if out, errOut, code := op("alice", "approve", id); code != 0 || strings.TrimSpace(out) != "approved" {
		t.Fatalf("alice's approve: exit %d %s %s", code, out, errOut)
	}
	if _, errOut, code := op("alice", "approve", id); code != exitRejected || !strings.Contains(errOut, "already approved") {
		t.Errorf("alice's second approve: exit %d %s; want rejected, already approved", code, errOut)
	}
	if out, errOut, code := op("carol", "approve", id); code != 0 || strings.TrimSpace(out) != "approved" {
		t.Fatalf("carol's approve: exit %d %s %s", code, out, errOut)
	}
	// The call reached the demo server, which now asks its form.
	form := askedFor("form")
	if _, _, code := op("alice", "respond", form, "--cancel"); code != 0 {
		t.Errorf("cancelling the demo server's form: exit %d", code)
	}
	<-first

	second := call()
	id = askedFor("permission")
	if _, errOut, code := op("alice", "respond", id, "--accept"); code == 0 {
		t.Errorf("respond --accept answered a permission request: %s", errOut)
	}
	if out, errOut, code := op("carol", "deny", id, "--reason", "change freeze until Monday"); code != 0 || strings.TrimSpace(out) != "denied" {
		t.Fatalf("carol's deny: exit %d %s %s", code, out, errOut)
	}
	select {
	case got := <-second:
		if !strings.Contains(got, "change freeze until Monday") || !strings.Contains(got, "carol") {
			t.Errorf("the denied call returned %q; want carol's reason", got)
		}
	case <-ctx.Done():
		t.Fatal("the denied call never returned")
	}
}

// TestApproveByIdentityGroup runs a gateway whose policy lets the
// identity group sre approve the demo server's deploy: alice, whom
// operators add places in sre (and whom the policy file does not name),
// approves with the CLI; bob, in another group, is refused
// control.rejected{unauthorized}, and the call waits for alice.
func TestApproveByIdentityGroup(t *testing.T) {
	t.Parallel()
	g := startPolicyGateway(t, "groups:\n  sre: {identity: true}\nrules:\n  - {id: sre-deploy, tool: deploy, action: ask, approvers: [group:sre]}\n",
		map[string][]string{"alice": {"--group", "sre"}, "bob": {"--group", "web"}})
	creds, endpoint, mcpAddr, holder := g.creds, g.endpoint, g.mcpAddr, g.holder
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		got, err := deployThrough(ctx, "http://"+mcpAddr+"/mcp", opsMCPToken, "agent")
		if err != nil {
			got = "error: " + err.Error()
		}
		done <- got
	}()
	req := holder.await("the permission request", func(f map[string]any) bool {
		return f["type"] == "attention.requested" && dataOf(f)["kind"] == "permission"
	})
	id := req["id"].(string)
	op := func(who string, args ...string) (string, string, int) {
		return cli(t, append(args, "--endpoint", endpoint, "--token", creds[who])...)
	}
	if _, errOut, code := op("bob", "approve", id); code != exitRejected || !strings.Contains(errOut, "unauthorized") || !strings.Contains(errOut, "not an approver") {
		t.Errorf("bob's approve: exit %d %s; want rejected unauthorized, not an approver", code, errOut)
	}
	rej := holder.await("bob's rejection", func(f map[string]any) bool {
		return f["type"] == "control.rejected"
	})
	if dataOf(rej)["reason"] != "unauthorized" {
		t.Errorf("bob's command was rejected %v; want reason unauthorized", dataOf(rej))
	}
	if out, errOut, code := op("alice", "approve", id); code != 0 || strings.TrimSpace(out) != "approved" {
		t.Fatalf("alice's approve, as a member of sre: exit %d %s %s", code, out, errOut)
	}
	ans := holder.await("alice's answer", func(f map[string]any) bool {
		return f["type"] == "attention.answered" && f["subject"] == id
	})
	if dataOf(ans)["by"] != "alice" {
		t.Errorf("attention.answered %v; want by alice", dataOf(ans))
	}
	// The call reached the demo server, which now asks its form.
	form := holder.await("the demo server's form", func(f map[string]any) bool {
		return f["type"] == "attention.requested" && dataOf(f)["kind"] == "form"
	})
	if _, _, code := op("alice", "respond", form["id"].(string), "--cancel"); code != 0 {
		t.Errorf("cancelling the demo server's form: exit %d", code)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the approved call never returned")
	}
}

// policyGateway is a gateway process in front of the demo server under
// an approval policy, with named operators and the token's holder
// subscribed.
type policyGateway struct {
	creds             map[string]string
	endpoint, mcpAddr string
	holder            *opConn
}

// startPolicyGateway runs the gateway under policy doc, with the named
// operators ops (each with its operators add flags).
func startPolicyGateway(t *testing.T, doc string, ops map[string][]string) policyGateway {
	t.Helper()
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	state := filepath.Join(dir, "state")
	creds := map[string]string{}
	for name, flags := range ops {
		creds[name] = addOp(t, state, append([]string{name}, flags...)...)
	}
	path := filepath.Join(dir, "policy.yaml")
	os.WriteFile(path, []byte(doc), 0o600)
	env := []string{"AEP_TOKEN=" + opsToken, "AEP_MCP_TOKEN=" + opsMCPToken}
	p := startProcessEnv(t, env, bin, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--state-dir", state,
		"--log-dir", "off", "--route", "remote", "--policy", path, "--", bin, "demo-server")
	aepAddr, mcpAddr := addrOf(t, p, "AEP endpoint"), addrOf(t, p, "MCP gateway")
	return policyGateway{creds: creds, endpoint: "http://" + aepAddr, mcpAddr: mcpAddr, holder: dialOp(t, aepAddr, opsToken, "holder")}
}

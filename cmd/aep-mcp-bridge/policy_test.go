package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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

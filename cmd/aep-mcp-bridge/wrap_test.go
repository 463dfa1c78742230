package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/clientconfig"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/textdiff"
)

// TestWrapCommand drives the subcommand: a diff and no change without
// --write; with it, the change and a backup; unwrap --write restores.
func TestWrapCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	src, _ := os.ReadFile(filepath.Join("..", "..", "internal", "clientconfig", "testdata", "claude_desktop_config.json"))
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, "wrap", path, "--bridge", "/opt/bin/aep-mcp-bridge")
	if code != 0 || !strings.Contains(out, `+      "command": "/opt/bin/aep-mcp-bridge",`) || !strings.Contains(out, `-      "command": "npx",`) {
		t.Fatalf("wrap without --write (exit %d): %s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, src) {
		t.Fatal("wrap without --write changed the file")
	}
	if _, errOut, code := cli(t, "wrap", "--write", path, "--bridge", "/opt/bin/aep-mcp-bridge"); code != 0 || !strings.Contains(errOut, "from the next time your MCP client starts it") {
		t.Fatalf("wrap --write: exit %d: %s", code, errOut)
	}
	wrapped, _ := os.ReadFile(path)
	backup, _ := os.ReadFile(path + clientconfig.BackupSuffix)
	if bytes.Equal(wrapped, src) || !bytes.Equal(backup, src) {
		t.Fatalf("after wrap --write: file changed %v, backup is the original %v", !bytes.Equal(wrapped, src), bytes.Equal(backup, src))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode became %v; want 0600 kept", fi.Mode().Perm())
	}
	if _, errOut, _ := cli(t, "wrap", "--write", path); !strings.Contains(errOut, "nothing to change") {
		t.Errorf("wrapping twice: %s", errOut)
	}
	if _, errOut, code := cli(t, "unwrap", path, "--write"); code != 0 {
		t.Fatalf("unwrap --write: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, src) {
		t.Fatalf("unwrap did not restore the file:\n%s", textdiff.Unified("original", "unwrapped", string(src), string(b)))
	}
	if _, errOut, code := cli(t, "wrap", filepath.Join(dir, "missing.json")); code != 1 || !strings.Contains(errOut, "missing.json") {
		t.Errorf("a missing file: exit %d, %s", code, errOut)
	}
	os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x",}`), 0o600)
	if _, errOut, code := cli(t, "wrap", path); code != 1 || !strings.Contains(errOut, "line 1") {
		t.Errorf("a broken file: exit %d, %s", code, errOut)
	}
}

// TestWrapWithARenamedBinary runs a renamed copy of the binary, as a
// versioned install is: wrap --write without --bridge writes the
// binary's own path, a second wrap (by it, or by a binary of the usual
// name) finds nothing to change, and unwrap --write gives each client's
// config back byte for byte.
func TestWrapWithARenamedBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	renamed := filepath.Join(dir, "aep-mcp-bridge-v9.9.9")
	// A second name for the same file, not a copy: a copy is written
	// through a descriptor that a parallel test's fork may still hold
	// when this test runs it, and exec then fails with "text file busy".
	if err := os.Link(bridgeBinary(t), renamed); err != nil {
		t.Fatalf("naming the binary %s: %v", filepath.Base(renamed), err)
	}
	run := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", filepath.Base(bin), args, err, out)
		}
		return string(out)
	}
	samples, err := filepath.Glob(filepath.Join("..", "..", "internal", "clientconfig", "testdata", "*.json"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample configs: %v", err)
	}
	for _, sample := range samples {
		src, err := os.ReadFile(sample)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Base(sample))
		if err := os.WriteFile(path, src, 0o600); err != nil {
			t.Fatal(err)
		}
		run(renamed, "wrap", "--write", path)
		wrapped, _ := os.ReadFile(path)
		if !strings.Contains(string(wrapped), `"`+renamed+`"`) {
			t.Fatalf("%s: wrap did not write the renamed binary's path:\n%s", sample, wrapped)
		}
		for _, bin := range []string{renamed, bridgeBinary(t)} {
			if out := run(bin, "wrap", "--write", path); !strings.Contains(out, "nothing to change") || !strings.Contains(out, "already runs through the bridge") {
				t.Errorf("%s: wrapping again with %s: %s", sample, filepath.Base(bin), out)
			}
		}
		if again, _ := os.ReadFile(path); !bytes.Equal(again, wrapped) {
			t.Fatalf("%s: wrapping again changed the file:\n%s", sample, textdiff.Unified("once", "twice", string(wrapped), string(again)))
		}
		run(renamed, "unwrap", "--write", path)
		if back, _ := os.ReadFile(path); !bytes.Equal(back, src) {
			t.Errorf("%s: unwrap did not restore the file:\n%s", sample, textdiff.Unified("original", "unwrapped", string(src), string(back)))
		}
	}
}

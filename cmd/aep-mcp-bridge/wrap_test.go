package main

import (
	"bytes"
	"os"
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

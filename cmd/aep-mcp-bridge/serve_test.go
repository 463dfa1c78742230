package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeAuthNoneOnlyOnLoopback: --mcp-auth none is refused off
// loopback, with the reason, before anything listens.
func TestServeAuthNoneOnlyOnLoopback(t *testing.T) {
	tests := []struct {
		name, listen string
		wantErr      bool
	}{
		{"all interfaces", "0.0.0.0:0", true},
		{"no host", ":0", true},
		{"a name", "example.com:0", true},
		{"loopback v4", "127.0.0.1:0", false},
		{"loopback v6", "[::1]:0", false},
		{"localhost", "localhost:0", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := &serveConfig{mcpListen: tc.listen, mcpAuth: "none"}
			_, _, err := sc.clientToken(&config{})
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("--mcp-auth none on %s: got error %v; want error %v", tc.listen, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "loopback") {
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
}

// TestServeStoresItsClientTokenAndNeverPrintsIt: with no --mcp-token, serve
// generates one, stores it 0600 beside the AEP token, and says where, not
// what; the AEP token is not printed either.
func TestServeStoresItsClientTokenAndNeverPrintsIt(t *testing.T) {
	state := t.TempDir()
	t.Setenv("AEP_MCP_TOKEN", "")
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args := []string{"serve", "--state-dir", state, "--log-dir", "off", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--", "cat"}
	go func() { done <- run(ctx, args, strings.NewReader(""), os.Stdout, stderr) }()
	stderr.waitFor(t, "MCP gateway on http://")
	path := filepath.Join(state, "mcp-token")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no stored client token: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode of %s: got %o; want 600", path, info.Mode().Perm())
	}
	tok, _ := os.ReadFile(path)
	if len(strings.TrimSpace(string(tok))) != 64 {
		t.Errorf("stored token: %d characters; want 64 hex", len(strings.TrimSpace(string(tok))))
	}
	if !strings.Contains(stderr.String(), "client token from "+path) {
		t.Errorf("serve does not say where the client token is:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), strings.TrimSpace(string(tok))) {
		t.Error("serve printed the client token")
	}
	aepTok, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil || len(strings.TrimSpace(string(aepTok))) == 0 {
		t.Fatalf("no stored AEP token: %v", err)
	}
	if strings.Contains(stderr.String(), strings.TrimSpace(string(aepTok))) {
		t.Errorf("serve printed the AEP token:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "token stored in "+filepath.Join(state, "token")) {
		t.Errorf("serve does not say where the AEP token is:\n%s", stderr.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{"--timeout", "1m"}, "no upstream server command"},
		{"bad capture", []string{"--capture", "everything", "--", "cat"}, "--capture"},
		{"bad route", []string{"--route", "nowhere", "--", "cat"}, "--route"},
		{"bad agent", []string{"--agent", "a/b", "--", "cat"}, "--agent"},
		{"bad timeout", []string{"--timeout", "0s", "--", "cat"}, "--timeout"},
		{"unknown flag", []string{"--frobnicate", "--", "cat"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			if exitCode(err) != 2 {
				t.Fatalf("exit code %d (%v); want 2", exitCode(err), err)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("stderr %q does not mention %q", stderr.String(), tt.want)
			}
		})
	}
}

// lockedBuffer is a buffer safe for the concurrent writers stderr has:
// the logger and the upstream's stderr copier.
type lockedBuffer struct{ testenv.Buffer }

// waitFor blocks until the buffer contains s, waking on every write.
func (l *lockedBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	l.WaitFor(t, s, 20*time.Second)
}

// waitForAny blocks until the next write or d passes: it paces a test
// that re-emits until a live-only stream shows what it emits.
func (l *lockedBuffer) waitForAny(d time.Duration) {
	select {
	case <-l.Changed():
	case <-time.After(d):
	}
}

func TestRunRelaysAndWritesNothingElseToStdout(t *testing.T) {
	var stdout bytes.Buffer
	var stderr lockedBuffer
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	// cat echoes the request back as if it were the server's message.
	err := run(context.Background(), []string{"--log-dir", t.TempDir(), "--listen", "off", "--", "cat"}, strings.NewReader(in), &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if line != "" && !strings.HasPrefix(line, `{"jsonrpc":"2.0"`) {
			t.Errorf("stdout carries a non-MCP line: %q", line)
		}
	}
	if !strings.Contains(stderr.String(), "session log") {
		t.Errorf("stderr lacks the session log path: %q", stderr.String())
	}
}

func TestAnswersFileErrorsStopTheBridge(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/answers.json"
	os.WriteFile(bad, []byte(`{"rules":[{"name":"r1","outcome":"approve"}]}`), 0o644)
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--answers", bad, "--listen", "off", "--", "cat"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `rule "r1"`) || !strings.Contains(err.Error(), "unknown outcome") {
		t.Fatalf("got %v; want an error naming the file, the rule and the problem", err)
	}
	err = run(context.Background(), []string{"--answers-only", "--listen", "off", "--", "cat"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if exitCode(err) != 2 || !strings.Contains(stderr.String(), "--answers-only needs --answers") {
		t.Fatalf("got %v / %s", err, stderr.String())
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestMain lets this test binary play the demo's built-in MCP server: the
// demo spawns os.Executable() with the demo-server subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "demo-server" {
		if err := serveDemo(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == "as-bridge" {
		os.Exit(mainCode(os.Args[2:])) // the binary itself, for tests of the process
	}
	testenv.Main(m)
}

var questionRe = regexp.MustCompile(`respond ([0-9A-Z]{26}) --values`)

// startDemo runs the demo in-process and returns its output and question.
func startDemo(t *testing.T, extra ...string) (stdout *lockedBuffer, addr, state, id string, done <-chan error) {
	t.Helper()
	return startDemoIn(t, t.TempDir(), extra...)
}

// startDemoIn is startDemo with the state folder state.
func startDemoIn(t *testing.T, state string, extra ...string) (stdout *lockedBuffer, addr, _, id string, done <-chan error) {
	t.Helper()
	stdout = &lockedBuffer{}
	ch := make(chan error, 1)
	args := append([]string{"demo", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off"}, extra...)
	go func() { ch <- run(context.Background(), args, strings.NewReader(""), stdout, io.Discard) }()
	stdout.waitFor(t, "--values")
	addr = stdout.boundAddr(t, "--endpoint http://")
	m := questionRe.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no respond command in the demo's output:\n%s", stdout.String())
	}
	return stdout, addr, state, m[1], ch
}

func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	if err != nil && !strings.Contains(errb.String(), err.Error()) {
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), exitCode(err)
}

func TestDemoAnsweredByTheCLI(t *testing.T) {
	stdout, addr, state, id, done := startDemo(t)
	endpoint := []string{"--endpoint", "http://" + addr, "--state-dir", state}

	out, _, code := cli(t, append([]string{"pending", "--json"}, endpoint...)...)
	var qs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) != 1 || qs[0]["id"] != id || qs[0]["server"] != "aep-mcp-bridge-demo" {
		t.Fatalf("pending --json (exit %d): %s", code, out)
	}
	// The fields come in the demo's declared order, the required service
	// name first, with their constraints and defaults.
	fields, _ := qs[0]["fields"].([]any)
	if len(fields) != 6 {
		t.Fatalf("pending --json fields: %v", qs[0]["fields"])
	}
	service, _ := fields[0].(map[string]any)
	replicas, _ := fields[1].(map[string]any)
	if service["id"] != "service" || service["required"] != true || service["minLength"] != 2.0 || service["pattern"] != "^[a-z][a-z0-9-]*$" ||
		replicas["id"] != "replicas" || replicas["default"] != 2.0 || replicas["max"] != 10.0 {
		t.Errorf("pending --json fields: %v", fields)
	}
	_, errOut, code := cli(t, append([]string{"respond", id, "--values", `{"service":"checkout","replicas":30}`}, endpoint...)...)
	if code != 3 || !strings.Contains(errOut, `field "replicas": maximum`) {
		t.Fatalf("invalid answer: exit %d, %q; want 3 with the detail", code, errOut)
	}
	out, _, code = cli(t, append([]string{"respond", id, "--values", `{"service":"checkout","replicas":3,"checks":["smoke","load"]}`}, endpoint...)...)
	if code != 0 || strings.TrimSpace(out) != "accepted" {
		t.Fatalf("valid answer: exit %d, %q", code, out)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not finish after the answer")
	}
	if s := stdout.String(); !strings.Contains(s, `"action":"accept"`) || !strings.Contains(s, `"replicas":3`) || !strings.Contains(s, `"checks":["smoke","load"]`) {
		t.Fatalf("demo output lacks the accepted content:\n%s", s)
	}
}

func TestDemoTimeoutShowsCancel(t *testing.T) {
	stdout, _, _, _, done := startDemo(t, "--timeout", "300ms")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := stdout.String(); !strings.Contains(s, `{"action":"cancel"}`) || !strings.Contains(s, "Nobody answered within 300ms, so the server got cancel.") ||
		strings.Contains(s, "An operator") {
		t.Fatalf("output:\n%s", s)
	}
}

// TestDemoInterruptedIsACleanExit: Ctrl-C while the question waits ends
// the demo with exit 0 and a line saying so, not an error.
func TestDemoInterruptedIsACleanExit(t *testing.T) {
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	args := []string{"demo", "--listen", "127.0.0.1:0", "--state-dir", t.TempDir(), "--log-dir", "off"}
	go func() { done <- run(ctx, args, strings.NewReader(""), stdout, stderr) }()
	stdout.waitFor(t, "--values")
	cancel() // what SIGINT does through mainCode's signal context
	if err := <-done; err != nil {
		t.Fatalf("demo interrupted: %v (exit %d); want a clean exit", err, exitCode(err))
	}
	if !strings.Contains(stdout.String(), "stopped before the question was answered") {
		t.Errorf("the demo does not say it stopped:\n%s", stdout.String())
	}
}

func TestRespondExitCodes(t *testing.T) {
	// An endpoint whose session never acks, holding one pending question.
	hub := bus.NewHub()
	em, _ := bus.NewEmitter(bus.EmitterOptions{Agent: "silent", Session: "s1", Sinks: []bus.Sink{hub}})
	req, _, _ := em.Emit(aep.Draft{Type: "attention.requested", Capture: aep.CaptureRedacted,
		Data: aep.AttentionRequested{Kind: "form", Prompt: "p", RespondVia: []string{"control"}}})
	ep, _ := endpoint.New(endpoint.Options{Token: "tok", Hub: hub})
	ep.AddClaim(endpoint.Claim{Session: "s1", Agent: "silent", Accepts: []string{"control.attention.respond"}, Target: silent{}})
	srv := httptest.NewServer(ep.Handler())
	defer srv.Close()
	defer ep.Close()
	base := []string{"--endpoint", srv.URL, "--token", "tok"}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no answer given", append([]string{"respond", req.ID}, base...), 2},
		{"two answers given", append([]string{"respond", req.ID, "--decline", "--cancel"}, base...), 2},
		{"values not an object", append([]string{"respond", req.ID, "--values", "[1]"}, base...), 2},
		{"unknown question", append([]string{"respond", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "--decline"}, base...), 3},
		{"no ack within the window", append([]string{"respond", req.ID, "--decline", "--wait", "500ms"}, base...), 4},
		{"wrong token", []string{"pending", "--endpoint", srv.URL, "--token", "nope"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := cli(t, tt.args...)
			if code != tt.want {
				t.Fatalf("exit %d (%s); want %d", code, errOut, tt.want)
			}
		})
	}
}

// silent takes commands and never acks them.
type silent struct{}

func (silent) Submit(aep.Event, control.Sender) (string, string) { return "", "" }

func TestTailPrintsEvents(t *testing.T) {
	hub := bus.NewHub()
	em, _ := bus.NewEmitter(bus.EmitterOptions{Agent: "a", Session: "s1", Sinks: []bus.Sink{hub}})
	ep, _ := endpoint.New(endpoint.Options{Token: "tok", Hub: hub})
	srv := httptest.NewServer(ep.Handler())
	defer srv.Close()
	defer ep.Close()
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"tail", "--endpoint", srv.URL, "--token", "tok", "--filter", `{"type":"session.*"}`}, nil, &out, io.Discard)
	}()
	// The stream is live-only: emit until tail shows one, bounded.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "session.started") && time.Now().Before(deadline) {
		em.Emit(aep.Draft{Type: "session.started", Data: map[string]any{"client": map[string]string{"name": "c"}}})
		em.Emit(aep.Draft{Type: "attention.timeout", Data: aep.AttentionTimeout{AfterMS: 1}})
		out.waitForAny(100 * time.Millisecond)
	}
	cancel()
	<-done
	s := out.String()
	if !strings.Contains(s, `session.started`) || !strings.Contains(s, `client {"name":"c"}`) || strings.Contains(s, "attention.timeout") {
		t.Fatalf("tail printed:\n%s", s)
	}
}

// TestRespondValuesFillsDefaults: a partial --values answer gets the
// declared defaults of the fields it leaves out, as the inbox and the
// prompt give them, and says which; --no-defaults sends it as given.
func TestRespondValuesFillsDefaults(t *testing.T) {
	tests := []struct {
		name       string
		extra      []string
		says       string
		server     []string // what the server must receive
		serverNot  []string // and must not
		saysNoFill bool
	}{
		{name: "defaults filled", says: "filled from the declared defaults (--no-defaults leaves them out): Replicas (replicas) = 2, Start with a canary (canary) = yes",
			server: []string{`"service":"checkout"`, `"replicas":2`, `"canary":true`}},
		{name: "--no-defaults", extra: []string{"--no-defaults"}, saysNoFill: true,
			server: []string{`"service":"checkout"`}, serverNot: []string{`"replicas"`, `"canary"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, addr, state, id, done := startDemo(t)
			args := append([]string{"respond", id, "--values", `{"service":"checkout"}`, "--endpoint", "http://" + addr, "--state-dir", state}, tc.extra...)
			out, errOut, code := cli(t, args...)
			if code != 0 || strings.TrimSpace(out) != "accepted" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if tc.saysNoFill == strings.Contains(errOut, "filled") || !strings.Contains(errOut, tc.says) {
				t.Errorf("stderr %q; want it to say %q", errOut, tc.says)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			_, received, _ := strings.Cut(stdout.String(), "The server received this ElicitResult:")
			received, _, _ = strings.Cut(strings.TrimSpace(received), "\n")
			for _, want := range tc.server {
				if !strings.Contains(received, want) {
					t.Errorf("the server did not receive %s: %s", want, received)
				}
			}
			for _, not := range tc.serverNot {
				if strings.Contains(received, not) {
					t.Errorf("the server received %s: %s", not, received)
				}
			}
		})
	}
	_, errOut, code := cli(t, "respond", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--decline", "--no-defaults")
	if code != exitUsage || !strings.Contains(errOut, "--no-defaults goes with --values") {
		t.Errorf("--no-defaults without --values: exit %d, %q", code, errOut)
	}
}

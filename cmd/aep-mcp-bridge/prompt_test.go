package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminalSession runs a command in-process with a pseudo-terminal as its
// stdin, stdout and stderr, the way an operator's shell runs it, and
// returns what the terminal shows and a way to type.
func terminalSession(t *testing.T, args ...string) (screen *lockedBuffer, typeLine func(string), done <-chan error) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	screen = &lockedBuffer{}
	copied := make(chan struct{})
	go func() { io.Copy(screen, ptmx); close(copied) }()
	ch := make(chan error, 1)
	go func() { ch <- run(context.Background(), args, tty, tty, tty) }()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-copied
	})
	return screen, func(s string) { ptmx.WriteString(s + "\r") }, ch
}

// TestRespondAsksFieldByField answers the demo's question at a terminal:
// each field shows its label, description, constraints and default, each
// answer is checked as it is typed with the bridge's wording, an empty
// line takes the default, and the answer goes once every field is filled.
func TestRespondAsksFieldByField(t *testing.T) {
	stdout, addr, state, id, demoDone := startDemo(t)
	screen, typeLine, done := terminalSession(t, "respond", id, "--endpoint", "http://"+addr, "--state-dir", state)
	steps := []step{
		{"[1/6] Service name (required)", ""},
		{"field \"service\": required: a value is required", "x"},
		{"field \"service\": minLength: must be at least 2 characters", "Checkout"},
		{"field \"service\": pattern: does not match the required pattern", "checkout"},
		{"[2/6] Replicas", "30"},
		{"field \"replicas\": maximum: must be at most 10", ""}, // the default, 2
		{"[3/6] Start with a canary", ""},                       // the default, yes
		{"[4/6] Region", "2"},
		{"[5/6] Checks to run", "1,2,3"},
		{"field \"checks\": maxItems: select at most 2", "smoke, load"},
		{"[6/6] On-call email", "nobody"},
		{"field \"contact\": format: must be a valid email address", ""},
	}
	typeSteps(t, screen, typeLine, steps)
	answered(t, screen, done)
	for _, want := range []string{
		"The service to deploy, as named in the service catalog", // the description
		"text, 2 to 40 characters, matching the pattern ^[a-z][a-z0-9-]*$",
		"a whole number, at least 1, at most 10", // integer-ness from the event's envelope
		"default: 2 (press Enter to take it)",
		"default: yes (press Enter to take it)",
		"  2) US (east) [us-east]",
		"choose any: numbers or ids, separated by commas, at most 2",
	} {
		if !strings.Contains(screen.String(), want) {
			t.Errorf("the terminal never showed %q:\n%s", want, screen.String())
		}
	}
	if err := <-demoDone; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"service":"checkout"`, `"replicas":2`, `"canary":true`, `"region":"us-east"`, `"checks":["smoke","load"]`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the server did not receive %s:\n%s", want, stdout.String())
		}
	}
}

// TestRespondRefusesAFractionForAWholeNumber: replicas is an integer (the
// event's envelope says so; its field spec says only "number"), so 2.5 is
// refused as it is typed, in the bridge's words, and asked again at once;
// every answer is sent once, and the server gets the whole number.
func TestRespondRefusesAFractionForAWholeNumber(t *testing.T) {
	stdout, addr, state, id, demoDone := startDemo(t)
	screen, typeLine, done := terminalSession(t, "respond", id, "--endpoint", "http://"+addr, "--state-dir", state)
	typeSteps(t, screen, typeLine, []step{
		{"[1/6] Service name (required)", "checkout"},
		{"[2/6] Replicas", "2.5"},
		{"field \"replicas\": type: must be an integer", "3"},
		{"[3/6] Start with a canary", "no"},
		{"[4/6] Region", "2"},
		{"[5/6] Checks to run", "load"},
		{"[6/6] On-call email", "oncall@example.com"},
	})
	answered(t, screen, done)
	if strings.Contains(screen.String(), "the bridge refused") {
		t.Errorf("the answer reached the bridge before it was a whole number:\n%s", screen.String())
	}
	for _, other := range []string{"[1/6]", "[2/6]", "[3/6]", "[4/6]", "[5/6]", "[6/6]"} {
		if n := strings.Count(screen.String(), other); n != 1 {
			t.Errorf("%s was asked %d times; want once", other, n)
		}
	}
	if err := <-demoDone; err != nil {
		t.Fatal(err)
	}
	_, received, _ := strings.Cut(stdout.String(), "The server received this ElicitResult:")
	for _, want := range []string{`"service":"checkout"`, `"replicas":3`, `"canary":false`, `"region":"us-east"`, `"checks":["load"]`, `"contact":"oncall@example.com"`} {
		if !strings.Contains(received, want) {
			t.Errorf("the server did not receive %s:\n%s", want, received)
		}
	}
}

// step is what the terminal shows, and the line typed once it does.
type step struct{ want, answer string }

// typeSteps types each step's answer once the terminal shows its want.
func typeSteps(t *testing.T, screen *lockedBuffer, typeLine func(string), steps []step) {
	t.Helper()
	for _, s := range steps {
		screen.waitFor(t, s.want)
		typeLine(s.answer)
	}
}

// answered waits for respond to end without error, saying accepted.
func answered(t *testing.T, screen *lockedBuffer, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("respond: %v\n%s", err, screen.String())
		}
	case <-time.After(waitLimit):
		t.Fatalf("respond did not finish:\n%s", screen.String())
	}
	screen.waitFor(t, "accepted")
}

// waitLimit bounds every wait here; tests wait on output, not on time.
const waitLimit = 30 * time.Second

// TestRespondWithoutATerminalRefuses: no answer flag and a stdin that is
// not a terminal is a usage error that says what to pass, before anything
// is sent.
func TestRespondWithoutATerminalRefuses(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stderr lockedBuffer
	err = run(context.Background(), []string{"respond", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--endpoint", "http://127.0.0.1:1", "--token", "t"}, f, io.Discard, &stderr)
	if exitCode(err) != exitUsage || !strings.Contains(stderr.String(), "stdin is not a terminal") || !strings.Contains(stderr.String(), "--values") {
		t.Fatalf("exit %d, %q", exitCode(err), stderr.String())
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDemoSaysHowTheQuestionEnded: respond prints what it sent, and the
// demo says who ended the question and how: an operator who declined or
// cancelled, or nobody in time.
func TestDemoSaysHowTheQuestionEnded(t *testing.T) {
	tests := []struct {
		name, flag, prints, says string
		action                   string
	}{
		{"decline", "--decline", "declined", "An operator (token holder) declined, so the server got decline.", `"action":"decline"`},
		{"cancel", "--cancel", "cancelled", "An operator (token holder) cancelled the question, so the server got cancel.", `"action":"cancel"`},
		{"decline as text", "--text= Decline ", "declined", "declined, so the server got decline.", `"action":"decline"`},
		{"values", `--values={"service":"checkout"}`, "accepted", "", `"action":"accept"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, addr, state, id, done := startDemo(t)
			out, errOut, code := cli(t, "respond", id, tc.flag, "--endpoint", "http://"+addr, "--state-dir", state)
			if code != 0 || strings.TrimSpace(out) != tc.prints {
				t.Fatalf("respond %s: exit %d, stdout %q, stderr %q; want %q", tc.flag, code, out, errOut, tc.prints)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			s := stdout.String()
			if !strings.Contains(s, tc.action) || !strings.Contains(s, tc.says) || strings.Contains(s, "Nobody answered") {
				t.Fatalf("the demo said:\n%s\nwant %s and %q", s, tc.action, tc.says)
			}
			if tc.says == "" && strings.Contains(s, "An operator") {
				t.Errorf("an accepted answer is reported as a refusal:\n%s", s)
			}
		})
	}
}

// TestDemoFollowsTheNamedOperators: the demo serves its endpoint from the
// state folder, so the operators recorded there reach it with their
// credentials, limited to their scopes, and the record says who answered.
func TestDemoFollowsTheNamedOperators(t *testing.T) {
	state := t.TempDir()
	alice := addOp(t, state, "alice", "--servers", "aep-mcp-bridge-*")
	carol := addOp(t, state, "carol", "--servers", "billing")
	stdout, addr, _, id, done := startDemoIn(t, state)
	endpoint := []string{"--endpoint", "http://" + addr}
	for who, want := range map[string]string{alice: "[" + id + "]", carol: "[]"} {
		out, errOut, code := cli(t, append([]string{"pending", "--json", "--token", who}, endpoint...)...)
		var qs []struct{ ID string }
		json.Unmarshal([]byte(out), &qs)
		var ids []string
		for _, q := range qs {
			ids = append(ids, q.ID)
		}
		if got := fmt.Sprint(ids); code != 0 || got != want {
			t.Errorf("pending with an operator's credential: exit %d, questions %s, stderr %q; want %s", code, got, errOut, want)
		}
	}
	if out, errOut, code := cli(t, append([]string{"respond", id, "--decline", "--token", carol}, endpoint...)...); code == 0 {
		t.Errorf("carol, scoped to billing, answered the demo's question: %q %q", out, errOut)
	}
	if out, errOut, code := cli(t, append([]string{"respond", id, "--decline", "--token", alice}, endpoint...)...); code != 0 {
		t.Fatalf("alice's decline: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := stdout.String(); !strings.Contains(s, "An operator (alice) declined") {
		t.Errorf("the demo said:\n%s\nwant alice named as who declined", s)
	}
}

func TestCommandFor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	module := filepath.Join(dir, "clone")
	pkg := filepath.Join(module, "cmd", "aep-mcp-bridge")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{pkg, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(module, "go.mod"), []byte("module example\n"), 0o644)
	installed := filepath.Join(bin, "aep-mcp-bridge")
	other := filepath.Join(dir, "my tools", "aep-mcp-bridge")
	os.MkdirAll(filepath.Dir(other), 0o755)
	for _, f := range []string{installed, other} {
		os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755)
	}
	onPath := func(name string) (string, error) {
		if name == "aep-mcp-bridge" {
			return installed, nil
		}
		return "", exec.ErrNotFound
	}
	goRun := filepath.Join(dir, "go-build123", "b001", "exe", "aep-mcp-bridge")
	tests := []struct {
		name, self, pkgDir, want string
	}{
		{"installed and on PATH", installed, pkg, "aep-mcp-bridge"},
		{"another copy than PATH's", other, pkg, "'" + other + "'"},
		{"go run", goRun, pkg, "go -C " + module + " run ./cmd/aep-mcp-bridge"},
		{"go run built with -trimpath", goRun, "example/cmd/aep-mcp-bridge", "go run ./cmd/aep-mcp-bridge"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandFor(tc.self, tc.pkgDir, onPath); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}

var (
	bridgeOnce sync.Once
	bridgeBin  string
	bridgeErr  error
)

// bridgeBinary builds the binary once for the tests that run it as a user
// does.
func bridgeBinary(t *testing.T) string {
	t.Helper()
	bridgeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bin")
		if err != nil {
			bridgeErr = err
			return
		}
		bridgeBin = filepath.Join(dir, "aep-mcp-bridge")
		if out, err := exec.Command("go", "build", "-o", bridgeBin, ".").CombinedOutput(); err != nil {
			bridgeErr = errors.New(string(out))
		}
	})
	if bridgeErr != nil {
		t.Fatalf("building the binary: %v", bridgeErr)
	}
	return bridgeBin
}

// printedCommand finds the line of the demo's output that runs the given
// subcommand and ends with what (a flag), and returns it as printed.
func printedCommand(t *testing.T, out, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no command matching %s in the demo's output:\n%s", pattern, out)
	}
	return m[1]
}

// TestDemoCommandsRunAsPrinted runs the demo as a user does: the binary
// installed on PATH, the binary run by its path, and go run from a clone.
// It runs the commands the demo prints, as printed, in a shell in another
// folder: the respond and inbox commands reach the demo's endpoint and
// token, and exit as documented.
func TestDemoCommandsRunAsPrinted(t *testing.T) {
	bin := bridgeBinary(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		start    []string // the demo's command
		onPath   bool
		command  string // what the printed commands start with
		respond  string // which respond command to run, by its answer flag
		prints   string
		endsWith string
	}{
		{"installed on PATH", []string{bin}, true, "aep-mcp-bridge", "--values", "accepted", `"action":"accept"`},
		{"run by its path", []string{bin}, false, shellQuote(bin), "--decline", "declined", "declined, so the server got decline."},
		{"go run in a clone", []string{"go", "run", "."}, false, "go -C " + shellQuote(root) + " run ./cmd/aep-mcp-bridge", "--decline", "declined",
			"declined, so the server got decline."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			path := os.Getenv("PATH")
			if tc.onPath {
				path = filepath.Dir(bin) + string(os.PathListSeparator) + path
			}
			// HOME stays: go run needs its build cache. The demo's state is
			// --state-dir, and nothing else is written.
			env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(home, "state"), "AEP_TOKEN=",
				"PATH="+path, "DISPLAY=", "WAYLAND_DISPLAY=")
			state := filepath.Join(home, "demo state")
			demo := exec.Command(tc.start[0], append(tc.start[1:], "demo", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off")...)
			demo.Env = env
			demo.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run's child goes with it
			pipe, err := demo.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr lockedBuffer
			demo.Stderr = &stderr
			if err := demo.Start(); err != nil {
				t.Fatal(err)
			}
			out := &lockedBuffer{}
			copied := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(pipe)
				for sc.Scan() {
					out.Write([]byte(sc.Text() + "\n"))
				}
				close(copied)
			}()
			finished := make(chan struct{})
			var waitErr error
			go func() { <-copied; waitErr = demo.Wait(); close(finished) }()
			t.Cleanup(func() {
				syscall.Kill(-demo.Process.Pid, syscall.SIGKILL) // an error once it has exited
				<-finished
			})
			// go run compiles first, on a machine other tests load too.
			out.WaitFor(t, "--decline", 3*time.Minute)
			shell := func(line string) (string, string, int) {
				t.Helper()
				sh := exec.Command("sh", "-c", line)
				sh.Env, sh.Dir = env, home
				var o, e strings.Builder
				sh.Stdout, sh.Stderr = &o, &e
				err := sh.Run()
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					t.Fatal(err)
				}
				return o.String(), e.String(), sh.ProcessState.ExitCode()
			}
			inbox := printedCommand(t, out.String(), `run: (.* inbox .*)\)\n`)
			if !strings.HasPrefix(inbox, tc.command+" inbox") {
				t.Errorf("the inbox command %q does not start with %q", inbox, tc.command)
			}
			if o, e, code := shell(inbox); code != 0 || !strings.Contains(o, "/#token=") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q", inbox, code, o, e)
			}
			respond := printedCommand(t, out.String(), `(?m)^  (\S.* respond [0-9A-Z]{26} `+regexp.QuoteMeta(tc.respond)+` .*)$`)
			if !strings.HasPrefix(respond, tc.command+" respond") {
				t.Errorf("the respond command %q does not start with %q", respond, tc.command)
			}
			o, e, code := shell(respond)
			if code != 0 || strings.TrimSpace(o) != tc.prints {
				t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit 0 and %q", respond, code, o, e, tc.prints)
			}
			select {
			case <-finished:
				if waitErr != nil {
					t.Fatalf("the demo: %v\n%s", waitErr, stderr.String())
				}
			case <-time.After(3 * time.Minute):
				t.Fatalf("the demo did not end:\n%s", out.String())
			}
			if !strings.Contains(out.String(), tc.endsWith) {
				t.Errorf("the demo said:\n%s\nwant %q", out.String(), tc.endsWith)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestEveryCommandPrintsItsHelp: --help and -h print the usage to stdout
// and exit 0, for the bridge, every subcommand (hidden ones too) and
// help itself; nothing goes to stderr.
func TestEveryCommandPrintsItsHelp(t *testing.T) {
	t.Parallel()
	type invocation struct {
		args []string
		want string
	}
	cases := []invocation{
		{[]string{"--help"}, "usage: aep-mcp-bridge [flags] -- COMMAND"},
		{[]string{"-h"}, "usage: aep-mcp-bridge [flags] -- COMMAND"},
		{[]string{"help"}, "usage: aep-mcp-bridge [flags] -- COMMAND"},
		{[]string{"help", "respond"}, "usage: aep-mcp-bridge respond ID"},
		{[]string{"help", "help"}, "usage: aep-mcp-bridge help [SUBCOMMAND]"},
	}
	for _, c := range commands() {
		cases = append(cases, invocation{[]string{c.name, "--help"}, "usage: aep-mcp-bridge " + c.name},
			invocation{[]string{c.name, "-h"}, "usage: aep-mcp-bridge " + c.name})
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err); code != 0 {
				t.Fatalf("exit %d (%v); want 0\nstderr: %s", code, err, stderr.String())
			}
			out := stdout.String()
			if !strings.HasPrefix(out, tc.want) || stderr.Len() != 0 {
				t.Fatalf("stdout %q; want it to start with %q; stderr %q", out, tc.want, stderr.String())
			}
			if !strings.Contains(out, "\nFlags:\n") && !strings.Contains(out, "This command takes no flags.") {
				t.Errorf("the help lists no flags:\n%s", out)
			}
		})
	}
}

// TestTopHelpListsEverySubcommand: the bridge's help names every visible
// subcommand and the -- form.
func TestTopHelpListsEverySubcommand(t *testing.T) {
	t.Parallel()
	out, _, code := cli(t, "help")
	if code != 0 || !strings.Contains(out, "aep-mcp-bridge [flags] -- COMMAND [ARGS...]") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, c := range commands() {
		if got := strings.Contains(out, "\n  "+c.name+" "); got == c.hidden {
			t.Errorf("help lists %s: %v; hidden %v", c.name, got, c.hidden)
		}
	}
}

// quietHome points HOME and XDG_STATE_HOME at empty folders, so a command
// that wrongly starts a bridge writes its token and log there.
func quietHome(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("AEP_TOKEN", "")
	return home
}

// filesUnder lists every file and folder under dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// takenAddr listens on a port of its own for the whole test: a command
// given it as --listen that tried to serve or join there shows up as a
// connection (pending reports it) or a bind error.
func takenAddr(t *testing.T) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	pending := func() int {
		rc, err := ln.(*net.TCPListener).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		rc.Control(func(fd uintptr) {
			for { // the listener is non-blocking: EAGAIN once none is queued
				nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC)
				if err != nil {
					return
				}
				syscall.Close(nfd)
				n++
			}
		})
		return n
	}
	return ln.Addr().String(), pending
}

// TestAWordThatIsNotASubcommandStartsNothing: a word that is not a
// subcommand and does not follow -- is a usage error (exit 2) that names
// the subcommands and the -- form, and nothing is written (no token, no
// log) and no port is served or joined.
func TestAWordThatIsNotASubcommandStartsNothing(t *testing.T) {
	home := quietHome(t)
	addr, pending := takenAddr(t)
	tests := []struct {
		name string
		args []string
		near string // the subcommand it suggests, if any
	}{
		{"run", []string{"run", "server.js"}, ""},
		{"a typo of respond", []string{"respnd", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "respond"},
		{"Help in capitals", []string{"Help"}, "help"},
		{"a server command without --", []string{"npx", "-y", "@modelcontextprotocol/server-everything"}, ""},
		{"after the bridge's flags", []string{"--listen", addr, "run"}, ""},
		{"after --url", []string{"--url", "https://mcp.example.com/mcp", "run"}, ""},
		{"under serve", []string{"serve", "--listen", addr, "--mcp-listen", "127.0.0.1:0", "run"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := cli(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d; want %d (a usage error)\n%s", code, exitUsage, errOut)
			}
			for _, want := range []string{"is not a subcommand", "serve, demo, inbox, pending, respond, approve, deny, tail, operators, clients, wrap, unwrap, answers-from, help, version",
				"put its command after --, e.g.: aep-mcp-bridge -- "} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if got := strings.Contains(errOut, "Did you mean: aep-mcp-bridge "+tc.near+"?"); got != (tc.near != "") {
				t.Errorf("suggests %q: %v\n%s", tc.near, got, errOut)
			}
		})
	}
	if files := filesUnder(t, home); len(files) > 0 {
		t.Errorf("files were written: %q", files)
	}
	if n := pending(); n > 0 {
		t.Errorf("%d connection(s) reached --listen's address", n)
	}
}

// TestTheBinaryStartsNothingForAWord runs the binary itself, as a user
// does, with words that used to start the endpoint, write a token and a
// log, and then fail to run them as the server: run, and, before they
// were subcommands, help and version.
func TestTheBinaryStartsNothingForAWord(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr, pending := takenAddr(t)
	tests := []struct {
		args     []string
		code     int
		stdout   string
		stderrIs string
	}{
		{[]string{"run", "--", "x"}, exitUsage, "", `"run" is not a subcommand`},
		{[]string{"--listen", addr, "run"}, exitUsage, "", `"run" is not a subcommand`},
		{[]string{"help"}, 0, "usage: aep-mcp-bridge [flags] -- COMMAND", ""},
		{[]string{"version"}, 0, "aep-mcp-bridge ", ""},
		{[]string{"--version"}, 0, "aep-mcp-bridge ", ""},
		{[]string{"answers-from", "--help"}, 0, "usage: aep-mcp-bridge answers-from", ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			home := t.TempDir()
			cmd := exec.Command(self, append([]string{"as-bridge"}, tc.args...)...)
			cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "AEP_TOKEN=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.HasPrefix(stdout.String(), tc.stdout) || (tc.stderrIs == "") != (stderr.Len() == 0) ||
				!strings.Contains(stderr.String(), tc.stderrIs) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout starting %q, stderr with %q",
					code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderrIs)
			}
			if files := filesUnder(t, home); len(files) > 0 {
				t.Errorf("files were written: %q", files)
			}
		})
	}
	if n := pending(); n > 0 {
		t.Errorf("%d connection(s) reached --listen's address", n)
	}
}

func TestNearestCommand(t *testing.T) {
	t.Parallel()
	for word, want := range map[string]string{"respnd": "respond", "tial": "tail", "wrpa": "wrap", "serv": "serve", "run": "", "x": "", "pendingg": "pending"} {
		if got := nearestCommand(word); got != want {
			t.Errorf("nearestCommand(%q) = %q; want %q", word, got, want)
		}
	}
}

// TestInboxBeforeAnyBridgeRuns: right after wrap, no bridge runs until
// the MCP client starts a wrapped server; inbox says so, with or without
// a token stored by an earlier bridge (the demo), instead of only failing.
func TestInboxBeforeAnyBridgeRuns(t *testing.T) {
	t.Setenv("AEP_TOKEN", "")
	stored := t.TempDir()
	os.Chmod(stored, 0o700)
	if _, _, err := loadToken("", stored, false); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, state string
		code        int
		says        string
	}{
		{"a token from an earlier bridge", stored, exitUnreachable, "it starts when your MCP client starts that server"},
		{"no bridge ever ran", filepath.Join(t.TempDir(), "state"), exitFailure, "which for a wrapped server is when your MCP client starts it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Port 1 on loopback: nothing listens there without root.
			out, errOut, code := cli(t, "inbox", "--no-open", "--endpoint", "http://127.0.0.1:1", "--state-dir", tc.state)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.says) || !strings.Contains(errOut, "aep-mcp-bridge demo") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d saying %q", code, out, errOut, tc.code, tc.says)
			}
		})
	}
}

// TestInboxBadEndpointIsNotEchoed: a mistyped --endpoint is refused with
// its scheme and host at most; its user info, path and query (where a
// pasted secret sits) are never printed.
func TestInboxBadEndpointIsNotEchoed(t *testing.T) {
	out, errOut, code := cli(t, "inbox", "--no-open", "--endpoint", "ftp://op:s3cret@127.0.0.1:1/x?token=s3cret", "--state-dir", t.TempDir())
	if code != exitUsage || out != "" || !strings.Contains(errOut, "want the endpoint's http(s) base URL") || strings.Contains(errOut, "s3cret") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want a usage error that does not show the URL's secret", code, out, errOut)
	}
}

// TestTokenStoredOnceByRacingBridges: bridges that start at once on a
// fresh state folder all end up with the one token stored there; none
// reads a half-written file (the conformance suite starts several).
func TestTokenStoredOnceByRacingBridges(t *testing.T) {
	t.Setenv("AEP_TOKEN", "")
	for round := range 20 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(round))
		const n = 8
		got := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i], _, errs[i] = loadToken("", dir, false) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || got[i] == "" || got[i] != got[0] {
				t.Fatalf("round %d, bridge %d: token %q, error %v; want the one stored token", round, i, got[i], errs[i])
			}
		}
	}
}

//go:build linux

package docs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// The README's commands use the bridge's fixed default ports. When user
// namespaces are allowed, the test runs itself again in a network
// namespace of its own (inNetnsEnv set), whose loopback nobody else
// listens on.
const inNetnsEnv = "AEP_DOCS_README_NETNS"

// readmeShell is the README as a reader follows it: the commands of its
// shell blocks, in order, and its fenced blocks by the marker before them.
type readmeShell struct {
	commands []string
	inline   []string // code spans in the prose that start like a command
	marked   map[string]string
}

var (
	fenceRE  = regexp.MustCompile("(?s)(<!-- ci-example:([^ ]+) -->\\s*)?```([a-z]*)\\n(.*?)```")
	inlineRE = regexp.MustCompile("`((?:go|aep-mcp-bridge|npm) [^`]+)`")
)

func parseReadme(text string) readmeShell {
	r := readmeShell{marked: map[string]string{}}
	prose := fenceRE.ReplaceAllStringFunc(text, func(block string) string {
		m := fenceRE.FindStringSubmatch(block)
		if m[2] != "" {
			r.marked[m[2]] = m[4]
		}
		if m[3] == "sh" {
			for _, l := range strings.Split(m[4], "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !slices.Contains(r.commands, l) {
					r.commands = append(r.commands, l)
				}
			}
		}
		return ""
	})
	for _, m := range inlineRE.FindAllStringSubmatch(strings.ReplaceAll(prose, "\n", " "), -1) {
		r.inline = append(r.inline, m[1])
	}
	return r
}

// synopsisRE marks a code span as a usage synopsis, not a command: it has
// an optional part or a placeholder in capitals (COMMAND, ARGS, URL).
var synopsisRE = regexp.MustCompile(`\[|\b[A-Z]{3,}\b`)

// TestReadmeCommands runs every command of the README's shell blocks as
// written, as a new user would on a fresh machine: a fresh HOME, a PATH
// with only Go and the system on it, no token in the environment, and no
// desktop. Long-running commands (the demo, tail, serve) are started,
// checked for what they print first, and stopped, or end by themselves
// once answered. `go run ./internal/devtest ./...` is the command .ci/run runs; the test
// checks that .ci/run runs it as written.
func TestReadmeCommands(t *testing.T) {
	if os.Getenv(inNetnsEnv) == "" {
		if ranInNetns(t) {
			return
		}
	} else if err := loopbackUp(); err != nil {
		t.Fatalf("bringing up the loopback interface of the test's network namespace: %v", err)
	}
	statSources(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := parseReadme(string(b))
	s := newShell(t)
	steps := readmeSteps()

	var want, got []string
	want = append(want, readme.commands...)
	for _, st := range steps {
		got = append(got, st.cmd)
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the README's shell commands and the ones this test runs differ (-README, +test); give each new command a step here:\n%s", diff)
	}
	for _, span := range readme.inline {
		switch {
		case slices.Contains(readme.commands, span):
		case strings.HasPrefix(span, "go install ") && strings.HasSuffix(span, "@latest"):
			checkReleaseInstall(t, span)
		case strings.HasPrefix(span, "npm "):
			checkCIRuns(t, span)
		case synopsisRE.MatchString(span):
		default:
			t.Errorf("the README shows the command %q in its prose; put it in a shell block (so this test runs it) or run it here", span)
		}
	}
	for _, st := range steps {
		t.Logf("$ %s", st.cmd)
		st.run(s, readme, st.cmd)
		if t.Failed() {
			return
		}
	}
}

// step is one README command and how the test runs and checks it.
type step struct {
	cmd string
	run func(s *shell, readme readmeShell, cmd string)
}

// readmeSteps are the README's commands in the order a reader runs them:
// the demo waits for an answer while the bridge is installed and its
// question answered from the command line.
func readmeSteps() []step {
	var demo, tail *proc
	var questionID string
	return []step{
		{"go run ./cmd/aep-mcp-bridge demo", func(s *shell, _ readmeShell, cmd string) {
			if s.lookPath("aep-mcp-bridge") != "" {
				s.t.Fatalf("aep-mcp-bridge is already on the test's PATH (%s) before the README installs it", s.lookPath("aep-mcp-bridge"))
			}
			demo = s.start(cmd, s.repo)
			demo.out.WaitFor(s.t, "asked a question through the bridge", 5*time.Minute)
			demo.out.WaitFor(s.t, " respond ", time.Minute)
			if strings.Contains(demo.errb.String(), "busy") {
				s.t.Fatalf("the demo did not get the README's port 8787:\n%s", demo.errb.String())
			}
		}},
		{"go run ./internal/devtest ./...", func(s *shell, _ readmeShell, cmd string) { checkCIRuns(s.t, cmd) }},
		{"go install ./cmd/aep-mcp-bridge", func(s *shell, _ readmeShell, cmd string) {
			s.run(cmd, s.repo, 5*time.Minute, 0)
			if _, err := os.Stat(filepath.Join(s.home, "go", "bin", "aep-mcp-bridge")); err != nil {
				s.t.Fatalf("go install did not put the binary where the README says ($(go env GOPATH)/bin, here ~/go/bin): %v", err)
			}
		}},
		{`export PATH="$(go env GOPATH)/bin:$PATH"`, func(s *shell, _ readmeShell, cmd string) { s.export(cmd) }},
		{"command -v aep-mcp-bridge", func(s *shell, _ readmeShell, cmd string) {
			out, _ := s.run(cmd, s.repo, time.Minute, 0)
			if want := filepath.Join(s.home, "go", "bin", "aep-mcp-bridge"); strings.TrimSpace(out) != want {
				s.t.Fatalf("the shell finds %q; want %s", out, want)
			}
		}},
		{"aep-mcp-bridge inbox", func(s *shell, _ readmeShell, cmd string) {
			out, _ := s.run(cmd, s.repo, time.Minute, 0)
			if !regexp.MustCompile(`(?m)^http://127\.0\.0\.1:8787/#token=[0-9a-f]{64}$`).MatchString(out) {
				s.t.Fatalf("inbox printed no link with the token; it printed %d bytes", len(out))
			}
		}},
		{"aep-mcp-bridge pending", func(s *shell, _ readmeShell, cmd string) {
			out, _ := s.run(cmd, s.repo, time.Minute, 0)
			m := regexp.MustCompile(`(?m)^([0-9A-HJKMNP-TV-Z]{26})\s.*aep-mcp-bridge-demo\s+form\s+Plan the deployment`).FindStringSubmatch(out)
			if m == nil {
				s.t.Fatalf("pending does not list the demo's question:\n%s", out)
			}
			questionID = m[1]
		}},
		{`aep-mcp-bridge tail --filter '{"type":["attention.*"]}'`, func(s *shell, _ readmeShell, cmd string) {
			tail = s.start(cmd, s.repo)
			tail.out.WaitFor(s.t, "attention.requested", time.Minute)
		}},
		{`aep-mcp-bridge respond ID --values '{"service":"checkout","replicas":3}'`, func(s *shell, _ readmeShell, cmd string) {
			if questionID == "" {
				s.t.Fatal("no question id: pending did not run first")
			}
			// ID stands for the id pending printed, as the README says.
			s.run(strings.Replace(cmd, " respond ID ", " respond "+questionID+" ", 1), s.repo, time.Minute, 0)
			demo.out.WaitFor(s.t, "The server received this ElicitResult", time.Minute)
			for _, want := range []string{`"action":"accept"`, `"service":"checkout"`, `"replicas":3`} {
				if !strings.Contains(demo.out.String(), want) {
					s.t.Errorf("the demo's server did not receive %s:\n%s", want, demo.out.String())
				}
			}
			if code := demo.wait(s.t, time.Minute); code != 0 {
				s.t.Errorf("the demo exited %d after its question was answered; stderr:\n%s", code, demo.errb.String())
			}
			tail.out.WaitFor(s.t, "attention.answered", time.Minute)
			tail.out.WaitFor(s.t, "attention.resolved", time.Minute)
			// The demo's bridge has stopped: tail ends, saying why.
			tail.wait(s.t, time.Minute)
			if tail.errb.String() == "" {
				s.t.Errorf("tail ended with the bridge without a word on stderr")
			}
		}},
		{"aep-mcp-bridge wrap .mcp.json", func(s *shell, _ readmeShell, cmd string) {
			out, _ := s.run(cmd, s.project, time.Minute, 0)
			if !strings.Contains(out, `"--name"`) || !strings.HasPrefix(out, "---") {
				s.t.Fatalf("wrap printed no diff that puts the server behind the bridge:\n%s", out)
			}
			if b, _ := os.ReadFile(filepath.Join(s.project, ".mcp.json")); string(b) != mcpJSON {
				s.t.Fatalf("wrap without --write changed the file:\n%s", b)
			}
		}},
		{"aep-mcp-bridge wrap .mcp.json --write", func(s *shell, _ readmeShell, cmd string) {
			s.run(cmd, s.project, time.Minute, 0)
			b, _ := os.ReadFile(filepath.Join(s.project, ".mcp.json"))
			if !strings.Contains(string(b), `"--name"`) {
				s.t.Fatalf("wrap --write left the file unwrapped:\n%s", b)
			}
			if bak, err := os.ReadFile(filepath.Join(s.project, ".mcp.json.aep-mcp-bridge.bak")); err != nil || string(bak) != mcpJSON {
				s.t.Fatalf("wrap --write kept no backup of the file as it was (%v):\n%s", err, bak)
			}
		}},
		{"aep-mcp-bridge unwrap .mcp.json --write", func(s *shell, _ readmeShell, cmd string) {
			s.run(cmd, s.project, time.Minute, 0)
			if b, _ := os.ReadFile(filepath.Join(s.project, ".mcp.json")); string(b) != mcpJSON {
				s.t.Fatalf("unwrap --write did not restore the file; it holds:\n%s", b)
			}
		}},
		{"aep-mcp-bridge serve -- aep-mcp-bridge demo-server", func(s *shell, _ readmeShell, cmd string) {
			p := s.start(cmd, s.project)
			p.errb.WaitFor(s.t, "MCP gateway on http://127.0.0.1:8788/mcp", time.Minute)
			token := filepath.Join(s.home, ".local", "state", "aep-mcp-bridge", "mcp-token")
			if !strings.Contains(p.errb.String(), token) {
				s.t.Errorf("serve does not say where the client token is (%s):\n%s", token, p.errb.String())
			}
			if b, err := os.ReadFile(token); err != nil || strings.Contains(p.errb.String()+p.out.String(), strings.TrimSpace(string(b))) {
				s.t.Errorf("the client token is missing (%v) or printed", err)
			}
			p.stop(s.t)
		}},
		{"aep-mcp-bridge --answers answers.json --answers-only --listen off --log-dir off -- aep-mcp-bridge demo-server", runCIExample},
	}
}

// mcpJSON is the project's MCP client configuration wrap rewrites.
const mcpJSON = `{
  "mcpServers": {
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}
  }
}
`

// runCIExample runs the CI example in a folder with the README's
// answers.json, as an MCP client over its stdio: the tool's question is
// answered by the rule, and the result reaches the client.
func runCIExample(s *shell, readme readmeShell, cmd string) {
	t := s.t
	dir := t.TempDir()
	answers, ok := readme.marked["answers.json"]
	if !ok {
		t.Fatal("the README has no ci-example:answers.json block")
	}
	if err := os.WriteFile(filepath.Join(dir, "answers.json"), []byte(answers), 0o644); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(readme.marked["command"]) != cmd {
		t.Fatalf("the ci-example:command block is %q; want %q", readme.marked["command"], cmd)
	}
	p := s.start(cmd, dir)
	// response waits for the JSON-RPC response with this id on the
	// bridge's stdout.
	response := func(id int) map[string]any {
		t.Helper()
		limit := time.After(time.Minute) // a failure guard, not a wait
		for {
			changed := p.out.Changed()
			for _, l := range strings.Split(p.out.String(), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["id"] == float64(id) {
					return m
				}
			}
			select {
			case <-changed:
			case <-p.done:
				t.Fatalf("the bridge exited before answering request %d; stderr:\n%s", id, p.errb.String())
			case <-limit:
				t.Fatalf("no answer to request %d; stderr:\n%s", id, p.errb.String())
			}
		}
	}
	io.WriteString(p.stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"readme-ci","version":"1"}}}`+"\n")
	response(1)
	io.WriteString(p.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy","arguments":{}}}`+"\n")
	res := response(2)
	b, _ := json.Marshal(res["result"])
	for _, want := range []string{`\"action\":\"accept\"`, `\"service\":\"checkout\"`, `\"replicas\":3`, `\"checks\":[\"smoke\"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the server's ElicitResult lacks %s: %s", want, b)
		}
	}
	p.stdin.Close()
	if code := p.wait(t, time.Minute); code != 0 {
		t.Errorf("the bridge exited %d when its client left; stderr:\n%s", code, p.errb.String())
	}
}

// checkCIRuns checks that .ci/run, or the .ci/setup it runs first, runs
// cmd as written, on a line of its own.
func checkCIRuns(t *testing.T, cmd string) {
	t.Helper()
	for _, name := range []string{"run", "setup"} {
		b, err := os.ReadFile(filepath.Join(root, ".ci", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) == cmd {
				return
			}
		}
	}
	t.Errorf("the README shows %q, which neither this test nor .ci/run runs as written", cmd)
}

// checkReleaseInstall checks what can be checked of the install command
// that works once a release is tagged: it names this module's command.
func checkReleaseInstall(t *testing.T, span string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod names no module")
	}
	if want := "go install " + string(m[1]) + "/cmd/aep-mcp-bridge@latest"; span != want {
		t.Errorf("the README's release install is %q; this module's is %q", span, want)
	}
}

// shell is the new user's terminal: a fresh HOME, and the environment
// every command runs with.
type shell struct {
	t                   *testing.T
	env                 []string
	home, repo, project string
}

func newShell(t *testing.T) *shell {
	t.Helper()
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	goEnv := func(k string) string {
		out, err := exec.Command(goBin, "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		return strings.TrimSpace(string(out))
	}
	s := &shell{t: t, home: t.TempDir(), repo: repo, project: t.TempDir()}
	if err := os.WriteFile(filepath.Join(s.project, ".mcp.json"), []byte(mcpJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	s.env = []string{
		"HOME=" + s.home,
		"PATH=" + filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin",
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		// The Go caches of this machine: a fresh HOME would otherwise
		// rebuild everything and download every module.
		"GOCACHE=" + goEnv("GOCACHE"),
		"GOMODCACHE=" + goEnv("GOMODCACHE"),
		"GOPROXY=off",
		"GOTOOLCHAIN=local",
		"GOFLAGS=",
	}
	return s
}

// lookPath finds name on the shell's PATH.
func (s *shell) lookPath(name string) string {
	for _, kv := range s.env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(p) {
				if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() {
					return filepath.Join(d, name)
				}
			}
		}
	}
	return ""
}

// command is cmd run by bash in dir, in its own process group.
func (s *shell) command(ctx context.Context, cmd, dir string) *exec.Cmd {
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = dir
	c.Env = s.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	return c
}

// run runs a command that ends by itself and checks its exit status; limit
// is a failure guard.
func (s *shell) run(cmd, dir string, limit time.Duration, want int) (stdout, stderr string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := s.command(ctx, cmd, dir)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		s.t.Fatalf("%s: %v", cmd, err)
	}
	if ctx.Err() != nil {
		s.t.Fatalf("%s: still running after %v; stderr:\n%s", cmd, limit, errb.String())
	}
	if code != want {
		s.t.Fatalf("%s: exit status %d, want %d; stderr:\n%s", cmd, code, want, errb.String())
	}
	return out.String(), errb.String()
}

// export runs an export line and keeps the environment it leaves.
func (s *shell) export(cmd string) {
	s.t.Helper()
	out, _ := s.run(cmd+"\nenv -0", s.repo, time.Minute, 0)
	var env []string
	for _, kv := range strings.Split(out, "\x00") {
		if kv != "" && !strings.HasPrefix(kv, "_=") && !strings.HasPrefix(kv, "SHLVL=") && !strings.HasPrefix(kv, "PWD=") && !strings.HasPrefix(kv, "OLDPWD=") {
			env = append(env, kv)
		}
	}
	s.env = env
}

// proc is a long-running command.
type proc struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	out, errb *testenv.Buffer
	done      chan struct{}
	err       error
}

// start starts a long-running command; the test's end stops it.
func (s *shell) start(cmd, dir string) *proc {
	s.t.Helper()
	p := &proc{out: &testenv.Buffer{}, errb: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd = s.command(context.Background(), cmd, dir)
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		s.t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errb
	if err := p.cmd.Start(); err != nil {
		s.t.Fatalf("%s: %v", cmd, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	s.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// wait waits for the command to end by itself and returns its exit status.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit): // a failure guard
		t.Fatalf("%s: still running after %v", p.cmd.Args[2], limit)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.cmd.Args[2], p.err)
	}
	return 0
}

// stop sends Ctrl-C (SIGINT to the process group, as a terminal does) and
// checks that the command ends cleanly.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Errorf("%s: exit status %d after Ctrl-C; stderr:\n%s", p.cmd.Args[2], code, p.errb.String())
	}
}

// portsFree reports whether the README's ports are free on this machine's
// loopback (outside a network namespace of the test's own).
func portsFree() error {
	for _, addr := range []string{"127.0.0.1:8787", "127.0.0.1:8788"} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return errors.New(addr + " is in use")
		}
	}
	return nil
}

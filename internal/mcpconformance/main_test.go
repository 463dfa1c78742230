package mcpconformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// clientEnv makes this test binary the command the suite runs as the
// client of its client scenarios (see runClient); its value is a
// clientConfig in JSON.
const clientEnv = "AEP_CONFORMANCE_CLIENT"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(clientEnv); cfg != "" {
		os.Exit(runClient(cfg, os.Args[1:], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Stdout, os.Stderr))
	}
	testenv.Main(m)
}

// clientConfig says how the reference client reaches the suite's server.
type clientConfig struct {
	// Client is the reference client (go-sdk's everything-client).
	Client string `json:"client"`
	// Stdio, when set, is the bridge the client speaks stdio to, up to
	// and without its last argument, the server URL: `aep-mcp-bridge …
	// --url`.
	Stdio []string `json:"stdio,omitempty"`
	// Serve, when set, is `aep-mcp-bridge serve …`, up to and without
	// --url URL, which the client reaches over HTTP.
	Serve []string `json:"serve,omitempty"`
	// Exits is a folder where each scenario's client exit status is
	// written, since the suite running many scenarios at once keeps only
	// their checks.
	Exits string `json:"exits"`
}

// notRun is the exit status recorded for an authorization scenario, which
// the client command does not run (see TestClientScenarios).
const notRun = -2

// runClient is the client command of the client scenarios: it runs the
// reference client against the suite's server (the last argument, as the
// suite passes it) directly, over stdio through the bridge, or through
// serve, records the client's exit status for the scenario, and exits
// with it. It runs nothing for the authorization scenarios.
func runClient(cfgJSON string, args []string, scenario string, stdout, stderr io.Writer) int {
	var cfg clientConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil || cfg.Client == "" || cfg.Exits == "" || len(args) == 0 || scenario == "" {
		fmt.Fprintf(stderr, "%s=%q with arguments %q and scenario %q: want {client, exits}, the server URL last, and MCP_CONFORMANCE_SCENARIO\n", clientEnv, cfgJSON, args, scenario)
		return 2
	}
	code := notRun
	if !strings.HasPrefix(scenario, "auth/") {
		code = client(cfg, args[len(args)-1], stdout, stderr)
	}
	if err := os.WriteFile(filepath.Join(cfg.Exits, url.PathEscape(scenario)), []byte(strconv.Itoa(code)), 0o644); err != nil {
		fmt.Fprintln(stderr, "recording the client's exit status:", err)
		return 1
	}
	return max(code, 0)
}

// clientExit reads the exit status runClient recorded for a scenario;
// ok is false when it recorded none (the client was killed at the
// suite's timeout, or never started).
func clientExit(exits, scenario string) (code int, ok bool) {
	b, err := os.ReadFile(filepath.Join(exits, url.PathEscape(scenario)))
	if err != nil {
		return 0, false
	}
	code, err = strconv.Atoi(string(b))
	return code, err == nil
}

func client(cfg clientConfig, serverURL string, stdout, stderr io.Writer) int {
	target := serverURL
	cmd := exec.Command(cfg.Client)
	switch {
	case len(cfg.Stdio) > 0:
		argv, _ := json.Marshal(cfg.Stdio)
		cmd.Env = append(os.Environ(), "AEP_CONFORMANCE_STDIO="+string(argv))
	case len(cfg.Serve) > 0:
		gw, stop, err := startServe(cfg.Serve, serverURL, stderr)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer stop()
		target = gw
	}
	cmd.Args = append(cmd.Args, target)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode()
		}
		fmt.Fprintln(stderr, "running the client:", err)
		return 1
	}
	return 0
}

// startServe starts `serve` with --url serverURL, its output going to
// stderr, and returns its MCP URL once it serves, and how to stop it.
func startServe(argv []string, serverURL string, stderr io.Writer) (string, func(), error) {
	bridge := exec.Command(argv[0], append(argv[1:], "--url", serverURL)...)
	bridge.Stdout = stderr
	pr, err := bridge.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := bridge.Start(); err != nil {
		return "", nil, fmt.Errorf("starting the bridge: %w", err)
	}
	stopped := make(chan struct{})
	served := make(chan string, 1)
	go func() {
		defer close(stopped)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(stderr, sc.Text())
			if m := gatewayOn.FindStringSubmatch(sc.Text() + "\n"); m != nil {
				served <- m[1]
			}
		}
		io.Copy(io.Discard, pr)
		bridge.Wait()
	}()
	stop := func() {
		bridge.Process.Signal(os.Interrupt)
		select {
		case <-stopped:
		case <-time.After(20 * time.Second):
			fmt.Fprintln(stderr, "the bridge did not stop on SIGINT; killing it")
			bridge.Process.Kill()
			<-stopped
		}
	}
	select {
	case gw := <-served:
		return gw, stop, nil
	case <-stopped:
		return "", nil, fmt.Errorf("the bridge exited before it served")
	case <-time.After(waitLimit):
		stop()
		return "", nil, fmt.Errorf("the bridge did not serve within %v", waitLimit)
	}
}

// slots bounds how many suite runs (each a Node process, the peers and
// bridges it talks to) go at once.
var slots = make(chan struct{}, max(2, runtime.NumCPU()+1))

// slot takes a run slot until the test ends.
func slot(t *testing.T) {
	slots <- struct{}{}
	t.Cleanup(func() { <-slots })
}

package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// runHTTP measures tools/call to a streamable-HTTP server that runs in a
// process of its own, in paired rounds, five ways: a direct mcp-go
// streamable-HTTP client; the same client through a raw TCP byte pump, a
// process between the same two peers that copies bytes without reading
// them; the same echo over stdio, direct and through the raw stdio pump,
// whose difference is what the stdio hop costs; and an mcp-go stdio client
// through the bridge fronting the server with --url. The bridge is
// reported above three floors, each the median over rounds of each round's
// difference (and ratio): the direct client, the TCP pump, and the direct
// client plus the stdio hop, the bridge's own topology done by pumps.
func runHTTP(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	n := fs.Int("n", 2000, "calls per configuration and round")
	rounds := fs.Int("rounds", 5, "paired rounds; the table reports the median of the rounds' percentiles")
	profile := fs.String("profile", "", "write a CPU profile of every bridge run to this folder (--cpuprofile), one file per run")
	base := fs.String("base", "", "also measure the bridge built from this checkout (another branch's or commit's tree), in the same paired rounds, and report this tree's bridge ÷ that one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := profileFolder(*profile); err != nil {
		return err
	}
	bridgeBin, serverBin, self, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	baseBin := ""
	if *base != "" {
		if baseBin, err = buildBridgeFrom(*base, filepath.Dir(bridgeBin)); err != nil {
			return err
		}
	}
	url, serverPID, stop, err := startHTTPServer(serverBin)
	if err != nil {
		return err
	}
	defer stop()
	pumpURL, pumpPID, stopPump, err := startTCPPump(self, url)
	if err != nil {
		return err
	}
	defer stopPump()
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)

	runs := 0
	// Each configuration times the calls and reads what its middle
	// process cost: the server's for the direct rows, else the pump's or
	// the bridge's.
	httpClient := func(url string, pid int) func() ([]time.Duration, callCost, error) {
		return func() ([]time.Duration, callCost, error) {
			tr, err := transport.NewStreamableHTTP(url)
			if err != nil {
				return nil, callCost{}, err
			}
			c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
			defer c.Close()
			return timeCallsCost(ctx, c, *n, pid)
		}
	}
	configs := []struct {
		name string
		run  func() ([]time.Duration, callCost, error)
	}{
		{pathHTTPDirect, httpClient(url, serverPID)},
		{pathHTTPPump, httpClient(pumpURL, pumpPID)},
		{pathStdioDirect, func() ([]time.Duration, callCost, error) {
			return measureGoCost(ctx, []string{serverBin}, 1, *n)
		}},
		{pathStdioPump, func() ([]time.Duration, callCost, error) {
			return measureGoCost(ctx, []string{self, "pump", serverBin}, 1, *n)
		}},
		{pathBridgeURL, func() ([]time.Duration, callCost, error) {
			argv := []string{bridgeBin, "--url", url, "--listen", "off", "--log-dir", logs, "--log-level", "error"}
			if *profile != "" {
				runs++
				argv = append(argv, "--cpuprofile", filepath.Join(*profile, fmt.Sprintf("http-%03d.pprof", runs)))
			}
			return bridgeCalls(ctx, argv, *n)
		}},
	}
	if baseBin != "" {
		configs = append(configs, struct {
			name string
			run  func() ([]time.Duration, callCost, error)
		}{pathBridgeBase, func() ([]time.Duration, callCost, error) {
			return bridgeCalls(ctx, []string{baseBin, "--url", url, "--listen", "off", "--log-dir", logs, "--log-level", "error"}, *n)
		}})
	}
	var m httpRounds
	for r := 0; r < *rounds; r++ {
		for _, cfg := range configs {
			lat, cost, err := cfg.run()
			if err != nil {
				return fmt.Errorf("%s: %w", cfg.name, err)
			}
			m.add(cfg.name, lat, cost)
		}
	}
	printHTTPTable(os.Stdout, *n, *rounds, m)
	return nil
}

// bridgeCalls spawns the bridge with argv and times n calls through it,
// with what its process cost per call.
func bridgeCalls(ctx context.Context, argv []string, n int) ([]time.Duration, callCost, error) {
	c, cmd, err := spawnGo(argv)
	if err != nil {
		return nil, callCost{}, err
	}
	defer c.Close()
	return timeCallsCost(ctx, c, n, cmd.Process.Pid)
}

// buildBridgeFrom builds the bridge of the checkout at dir into out, as
// aep-mcp-bridge-base, and returns its path.
func buildBridgeFrom(dir, out string) (string, error) {
	bin := filepath.Join(out, "aep-mcp-bridge-base")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/aep-mcp-bridge")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("-base %s: building its bridge: %v\n%s", dir, err, b)
	}
	return bin, nil
}

// httpRounds are runHTTP's measurements by path, one entry per round:
// p50, p99, and the middle process's CPU time and runs per call.
type httpRounds struct {
	p50, p99, cpu map[string][]time.Duration
	runs          map[string][]float64
}

// add records one round of a path.
func (m *httpRounds) add(path string, lat []time.Duration, cost callCost) {
	if m.p50 == nil {
		m.p50, m.p99, m.cpu, m.runs = map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]float64{}
	}
	sortDurations(lat)
	m.p50[path] = append(m.p50[path], percentile(lat, 50))
	m.p99[path] = append(m.p99[path], percentile(lat, 99))
	m.cpu[path] = append(m.cpu[path], cost.cpu)
	m.runs[path] = append(m.runs[path], cost.runs)
}

// The paths runHTTP measures.
const (
	pathHTTPDirect  = "direct (mcp-go streamable-HTTP client)"
	pathHTTPPump    = "HTTP through the raw TCP pump (same client and server)"
	pathStdioDirect = "stdio, direct (mcp-go client and server)"
	pathStdioPump   = "stdio, through the raw pump"
	pathBridgeURL   = "bridge (--url, mcp-go stdio client)"
	pathBridgeBase  = "bridge of -base (--url, mcp-go stdio client)"
	pathFloor       = "floor: direct + the stdio hop (pump − stdio direct)"
)

// printHTTPTable prints runHTTP's tables: each path's median p50 and p99;
// then the bridge above each floor, by the median over rounds of each
// round's difference and ratio.
func printHTTPTable(w io.Writer, n, rounds int, m httpRounds) {
	p50 := m.p50
	// Per round: the stdio hop's cost, and the floor it makes with the
	// direct client.
	var hop, floor []time.Duration
	for r := range p50[pathBridgeURL] {
		h := p50[pathStdioPump][r] - p50[pathStdioDirect][r]
		hop, floor = append(hop, h), append(floor, p50[pathHTTPDirect][r]+h)
	}
	direct := median(p50[pathHTTPDirect])
	fmt.Fprintf(w, "tools/call round trip to a streamable-HTTP Go server in its own process; %d calls per row and round, %d paired rounds; medians of the rounds\n", n, rounds)
	fmt.Fprintf(w, "CPU and runs: the middle process's per call (the server's on the direct rows), from the kernel's scheduler statistics\n\n")
	fmt.Fprintln(w, "| path | p50 µs | p99 µs | p50 vs direct | CPU µs per call | runs on a CPU per call |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, name := range []string{pathHTTPDirect, pathHTTPPump, pathStdioDirect, pathStdioPump, pathBridgeURL, pathBridgeBase} {
		if len(p50[name]) == 0 {
			continue // -base not given
		}
		a := median(p50[name])
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× | %s | %.2f |\n", name, us(a), us(median(m.p99[name])), float64(a)/float64(direct), us(median(m.cpu[name])), medianFloat(m.runs[name]))
	}
	fmt.Fprintf(w, "\nthe bridge's p50 above each floor; the stdio hop costs %s µs, the TCP pump's hop %s µs (medians of paired rounds)\n\n",
		us(median(hop)), us(medianDiff(p50[pathHTTPPump], p50[pathHTTPDirect])))
	fmt.Fprintln(w, "| floor | floor p50 µs | bridge above it, µs | bridge ÷ floor |")
	fmt.Fprintln(w, "|---|---|---|---|")
	bridge := p50[pathBridgeURL]
	for _, f := range []struct {
		name string
		p50  []time.Duration
	}{
		{pathHTTPDirect, p50[pathHTTPDirect]},
		{pathHTTPPump, p50[pathHTTPPump]},
		{pathFloor + " (target: at most 50 µs above)", floor},
	} {
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× |\n", f.name, us(median(f.p50)), us(medianDiff(bridge, f.p50)), medianRatio(bridge, f.p50))
	}
	if b := p50[pathBridgeBase]; len(b) > 0 {
		fmt.Fprintf(w, "\nthis bridge against -base's, paired rounds: p50 %s µs apart (%.2f×); CPU per call %s µs apart (%.2f×); runs per call %.2f against %.2f\n",
			us(medianDiff(bridge, b)), medianRatio(bridge, b), us(medianDiff(m.cpu[pathBridgeURL], m.cpu[pathBridgeBase])), medianRatio(m.cpu[pathBridgeURL], m.cpu[pathBridgeBase]),
			medianFloat(m.runs[pathBridgeURL]), medianFloat(m.runs[pathBridgeBase]))
	}
}

// medianDiff is the median over paired rounds of a[r] − b[r].
func medianDiff(a, b []time.Duration) time.Duration {
	d := make([]time.Duration, len(a))
	for r := range a {
		d[r] = a[r] - b[r]
	}
	return median(d)
}

// medianRatio is the median over paired rounds of a[r] ÷ b[r].
func medianRatio(a, b []time.Duration) float64 {
	v := make([]float64, len(a))
	for r := range a {
		v[r] = float64(a[r]) / float64(b[r])
	}
	return medianFloat(v)
}

// startHTTPServer runs the mcp-go test server over streamable HTTP in a
// process of its own on a free loopback port, and returns its MCP URL,
// its process id and the function that stops it.
func startHTTPServer(serverBin string) (string, int, func(), error) {
	return startAnnounced(exec.Command(serverBin, "-http", "127.0.0.1:0"))
}

// startTCPPump runs this program's raw TCP pump in front of the server at
// url, in a process of its own, and returns the URL to reach the server
// through it, its process id and the function that stops it.
func startTCPPump(self, url string) (string, int, func(), error) {
	return startAnnounced(exec.Command(self, "tcp-pump", url))
}

// startAnnounced starts cmd, which says on stderr where it listens, and
// returns that URL, its process id and the function that stops it.
func startAnnounced(cmd *exec.Cmd) (string, int, func(), error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", 0, nil, err
	}
	url, stop, err := startListener(cmd, stderr, os.Stderr)
	if err != nil {
		return "", 0, nil, err
	}
	return url, cmd.Process.Pid, stop, nil
}

// startListener starts cmd, whose out (its stdout or stderr) announces
// "listening on URL", and returns the URL and the function that stops
// it; what out says afterwards goes to rest.
func startListener(cmd *exec.Cmd, out io.Reader, rest io.Writer) (string, func(), error) {
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go io.Copy(rest, out)
			return strings.TrimSpace(url), stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("%s exited before it said where it listens: %v", filepath.Base(cmd.Path), sc.Err())
}

// timeCalls initializes c and times n sequential echo calls.
func timeCalls(ctx context.Context, c *client.Client, n int) ([]time.Duration, error) {
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, err
	}
	req := echoRequest()
	for i := 0; i < 100; i++ {
		if _, err := c.CallTool(ctx, req); err != nil {
			return nil, err
		}
	}
	return timeEchoes(ctx, c, req, n)
}

// timeCallsCost is timeCalls that also reads what process pid cost per
// timed call.
func timeCallsCost(ctx context.Context, c *client.Client, n, pid int) ([]time.Duration, callCost, error) {
	if _, err := timeCalls(ctx, c, 0); err != nil {
		return nil, callCost{}, err
	}
	before, err := readSchedStat(pid)
	if err != nil {
		return nil, callCost{}, err
	}
	lat, err := timeEchoes(ctx, c, echoRequest(), n)
	if err != nil {
		return nil, callCost{}, err
	}
	after, err := readSchedStat(pid)
	if err != nil {
		return nil, callCost{}, err
	}
	return lat, after.perCall(before, len(lat)), nil
}

// timeEchoes times n sequential calls of req.
func timeEchoes(ctx context.Context, c *client.Client, req mcp.CallToolRequest, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := c.CallTool(ctx, req); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// echoRequest is the echo tools/call every benchmark times.
func echoRequest() mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "ping"}
	return req
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// supergatewayJS is supergateway 4.0.0, pinned in internal/testpeers/npm.
const supergatewayJS = "internal/testpeers/npm/node_modules/supergateway/dist/index.js"

// runGateway measures, side by side in one run, concurrent sessions of
// sequential echo tools/calls to the same stdio server (the mcp-go test
// server) three ways: over stdio directly (one server process per
// session, no gateway), through aep-mcp-bridge serve, and through
// supergateway --stdio with stateful streamable HTTP (each also spawns
// one server per session). It prints p50 and p99 of every call, and the
// memory each session costs in the gateway process.
func runGateway(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	sessions := fs.Int("sessions", 50, "concurrent client sessions")
	calls := fs.Int("calls", 200, "timed echo calls per session")
	rounds := fs.Int("rounds", 3, "interleaved rounds; the table reports the median of the rounds' figures")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := os.Stat(supergatewayJS); err != nil {
		return fmt.Errorf("supergateway is not installed at %s: run npm ci --prefix internal/testpeers/npm from the repository root", supergatewayJS)
	}
	bridgeBin, serverBin, _, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)
	sg, _ := filepath.Abs(supergatewayJS)

	paths := []gatewayPath{
		{name: "direct over stdio (no gateway)", direct: serverBin},
		{name: "aep-mcp-bridge serve", start: func(port string) *exec.Cmd {
			return exec.Command(bridgeBin, "serve", "--mcp-listen", "127.0.0.1:"+port, "--mcp-auth", "none", "--listen", "off",
				"--log-dir", logs, "--log-level", "error", "--max-sessions", strconv.Itoa(*sessions), "--", serverBin)
		}},
		{name: "supergateway --stdio (stateful streamable HTTP)", start: func(port string) *exec.Cmd {
			return exec.Command("node", sg, "--stdio", serverBin, "--outputTransport", "streamableHttp", "--stateful",
				"--port", port, "--logLevel", "none")
		}},
	}
	results := map[string][]gatewayResult{}
	for r := 0; r < *rounds; r++ {
		for _, p := range paths {
			res, err := p.run(ctx, *sessions, *calls)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			results[p.name] = append(results[p.name], res)
		}
	}
	fmt.Printf("%d sessions × %d echo tools/call each, concurrently, to the mcp-go test server over stdio; %d rounds, median of rounds\n\n", *sessions, *calls, *rounds)
	fmt.Println("| path | p50 µs | p99 µs | gateway RSS per session | gateway + servers RSS per session |")
	fmt.Println("|---|---|---|---|---|")
	for _, p := range paths {
		rs := results[p.name]
		p50 := medianOf(rs, func(r gatewayResult) float64 { return float64(r.p50) })
		p99 := medianOf(rs, func(r gatewayResult) float64 { return float64(r.p99) })
		own := medianOf(rs, func(r gatewayResult) float64 { return r.ownKB })
		tree := medianOf(rs, func(r gatewayResult) float64 { return r.treeKB })
		ownCol := "–"
		if p.direct == "" {
			ownCol = fmt.Sprintf("%.0f KiB", own/float64(*sessions))
		}
		fmt.Printf("| %s | %s | %s | %s | %.0f KiB |\n", p.name, us(time.Duration(p50)), us(time.Duration(p99)), ownCol, tree/float64(*sessions))
	}
	fmt.Println("\nRSS per session: the process's RSS with every session open, less its RSS before the first, divided by the sessions; servers are the spawned MCP servers (for direct, the servers alone).")
	return nil
}

// gatewayPath is one way to reach the server: direct (a stdio client per
// session of the server binary), or a gateway process started on a port.
type gatewayPath struct {
	name   string
	direct string
	start  func(port string) *exec.Cmd
}

// gatewayResult is one round of one path.
type gatewayResult struct {
	p50, p99      time.Duration
	ownKB, treeKB float64 // RSS added by the sessions: the gateway's, and with its servers
}

func medianOf(rs []gatewayResult, f func(gatewayResult) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	for i := range v {
		for j := i + 1; j < len(v); j++ {
			if v[j] < v[i] {
				v[i], v[j] = v[j], v[i]
			}
		}
	}
	return v[len(v)/2]
}

// run starts the path's gateway (if any), opens the sessions, times the
// calls, and measures memory with every session open.
func (p gatewayPath) run(ctx context.Context, sessions, calls int) (gatewayResult, error) {
	var res gatewayResult
	url, pid := "", os.Getpid()
	baseOwn, baseTree := 0.0, 0.0
	if p.start != nil {
		port, err := freePort()
		if err != nil {
			return res, err
		}
		cmd := p.start(port)
		stop, err := startAndWait(cmd, port)
		if err != nil {
			return res, err
		}
		defer stop()
		url, pid = "http://127.0.0.1:"+port+"/mcp", cmd.Process.Pid
		baseOwn, baseTree = rssKB(pid), treeRSSKB(pid)
	} else {
		baseTree = treeRSSKB(pid) - rssKB(pid) // the servers this process spawned
	}
	clients := make([]*client.Client, sessions)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := p.connect(url)
		if err != nil {
			return res, err
		}
		clients[i] = c
	}
	lat := make([][]time.Duration, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	start := make(chan struct{})
	ready := sync.WaitGroup{}
	for i, c := range clients {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			lat[i], errs[i] = timeCallsAfter(ctx, c, calls, ready.Done, start)
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sortDurations(all)
	res.p50, res.p99 = percentile(all, 50), percentile(all, 99)
	if p.start != nil {
		res.ownKB = rssKB(pid) - baseOwn
		res.treeKB = treeRSSKB(pid) - baseTree
	} else {
		res.treeKB = treeRSSKB(pid) - rssKB(pid) - baseTree
	}
	return res, nil
}

// connect opens one session: a stdio client of the server (direct), or a
// streamable HTTP client of the gateway.
func (p gatewayPath) connect(url string) (*client.Client, error) {
	if p.direct != "" {
		c, err := client.NewStdioMCPClientWithOptions(p.direct, nil, nil)
		if err != nil {
			return nil, err
		}
		return client.NewClient(c.GetTransport(), client.WithProtocolVersion("2025-11-25")), nil
	}
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		return nil, err
	}
	return client.NewClient(tr, client.WithProtocolVersion("2025-11-25")), nil
}

// timeCallsAfter initializes c and warms it up (timeCalls with n = 0),
// reports ready, waits for start, then times n sequential echo calls, so
// every session's timed calls run concurrently.
func timeCallsAfter(ctx context.Context, c *client.Client, n int, ready func(), start <-chan struct{}) ([]time.Duration, error) {
	_, err := timeCalls(ctx, c, 0)
	ready()
	if err != nil {
		return nil, err
	}
	<-start
	return timeEchoes(ctx, c, echoRequest(), n)
}

// freePort returns a port nothing listens on now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}

// startAndWait starts a gateway and waits until port accepts
// connections (it logs nothing that says so at its quietest level, and
// logging costs time); stop ends it and waits.
func startAndWait(cmd *exec.Cmd, port string) (stop func(), err error) {
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			conn.Close()
			return stop, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%s exited before it listened on %s", cmd.Path, port)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("%s did not listen on %s within 30s", cmd.Path, port)
		}
	}
}

// rssKB is a process's resident set in KiB (VmRSS), or 0.
func rssKB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseFloat(f[1], 64)
			return n
		}
	}
	return 0
}

// treeRSSKB is the RSS of pid and every process below it.
func treeRSSKB(pid int) float64 {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The ppid is the second field after the parenthesized name.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) >= 2 {
				pp, _ := strconv.Atoi(f[1])
				children[pp] = append(children[pp], p)
			}
		}
	}
	total := 0.0
	var walk func(int)
	walk = func(p int) {
		total += rssKB(p)
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return total
}

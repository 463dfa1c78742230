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
	if err := fs.Parse(args); err != nil {
		return err
	}
	bridgeBin, serverBin, self, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	url, stop, err := startHTTPServer(serverBin)
	if err != nil {
		return err
	}
	defer stop()
	pumpURL, stopPump, err := startTCPPump(self, url)
	if err != nil {
		return err
	}
	defer stopPump()
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)

	runs := 0
	httpClient := func(url string) func() ([]time.Duration, error) {
		return func() ([]time.Duration, error) {
			tr, err := transport.NewStreamableHTTP(url)
			if err != nil {
				return nil, err
			}
			c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
			defer c.Close()
			return timeCalls(ctx, c, *n)
		}
	}
	configs := []struct {
		name string
		run  func() ([]time.Duration, error)
	}{
		{pathHTTPDirect, httpClient(url)},
		{pathHTTPPump, httpClient(pumpURL)},
		{pathStdioDirect, func() ([]time.Duration, error) {
			return measureGo(ctx, []string{serverBin}, 1, *n)
		}},
		{pathStdioPump, func() ([]time.Duration, error) {
			return measureGo(ctx, []string{self, "pump", serverBin}, 1, *n)
		}},
		{pathBridgeURL, func() ([]time.Duration, error) {
			argv := []string{"--url", url, "--listen", "off", "--log-dir", logs, "--log-level", "error"}
			if *profile != "" {
				runs++
				argv = append(argv, "--cpuprofile", filepath.Join(*profile, fmt.Sprintf("http-%03d.pprof", runs)))
			}
			c, err := client.NewStdioMCPClientWithOptions(bridgeBin, nil, argv)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			c = client.NewClient(c.GetTransport(), client.WithProtocolVersion("2025-11-25"))
			return timeCalls(ctx, c, *n)
		}},
	}
	p50 := map[string][]time.Duration{}
	p99 := map[string][]time.Duration{}
	for r := 0; r < *rounds; r++ {
		for _, cfg := range configs {
			lat, err := cfg.run()
			if err != nil {
				return fmt.Errorf("%s: %w", cfg.name, err)
			}
			sortDurations(lat)
			p50[cfg.name] = append(p50[cfg.name], percentile(lat, 50))
			p99[cfg.name] = append(p99[cfg.name], percentile(lat, 99))
		}
	}
	printHTTPTable(os.Stdout, *n, *rounds, p50, p99)
	return nil
}

// The paths runHTTP measures.
const (
	pathHTTPDirect  = "direct (mcp-go streamable-HTTP client)"
	pathHTTPPump    = "HTTP through the raw TCP pump (same client and server)"
	pathStdioDirect = "stdio, direct (mcp-go client and server)"
	pathStdioPump   = "stdio, through the raw pump"
	pathBridgeURL   = "bridge (--url, mcp-go stdio client)"
	pathFloor       = "floor: direct + the stdio hop (pump − stdio direct)"
)

// printHTTPTable prints runHTTP's tables: each path's median p50 and p99;
// then the bridge above each floor, by the median over rounds of each
// round's difference and ratio.
func printHTTPTable(w io.Writer, n, rounds int, p50, p99 map[string][]time.Duration) {
	// Per round: the stdio hop's cost, and the floor it makes with the
	// direct client.
	var hop, floor []time.Duration
	for r := range p50[pathBridgeURL] {
		h := p50[pathStdioPump][r] - p50[pathStdioDirect][r]
		hop, floor = append(hop, h), append(floor, p50[pathHTTPDirect][r]+h)
	}
	direct := median(p50[pathHTTPDirect])
	fmt.Fprintf(w, "tools/call round trip to a streamable-HTTP Go server in its own process; %d calls per row and round, %d paired rounds; medians of the rounds\n\n", n, rounds)
	fmt.Fprintln(w, "| path | p50 µs | p99 µs | p50 vs direct |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, name := range []string{pathHTTPDirect, pathHTTPPump, pathStdioDirect, pathStdioPump, pathBridgeURL} {
		a := median(p50[name])
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× |\n", name, us(a), us(median(p99[name])), float64(a)/float64(direct))
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
// process of its own on a free loopback port, and returns its MCP URL and
// the function that stops it.
func startHTTPServer(serverBin string) (string, func(), error) {
	cmd := exec.Command(serverBin, "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	return startListener(cmd, stderr, os.Stderr)
}

// startTCPPump runs this program's raw TCP pump in front of the server at
// url, in a process of its own, and returns the URL to reach the server
// through it and the function that stops it.
func startTCPPump(self, url string) (string, func(), error) {
	cmd := exec.Command(self, "tcp-pump", url)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	return startListener(cmd, stderr, os.Stderr)
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

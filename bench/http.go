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
// process of its own, in paired rounds, four ways: a direct mcp-go
// streamable-HTTP client; the same echo over stdio, direct and through the
// raw pump, whose difference is what the stdio hop costs; and an mcp-go
// stdio client through the bridge fronting the server with --url. The
// floor of the bridge is the direct HTTP client plus the stdio hop: the
// table reports the bridge's p50 above it, the median over rounds of each
// round's difference.
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
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)

	runs := 0
	configs := []struct {
		name string
		run  func() ([]time.Duration, error)
	}{
		{pathHTTPDirect, func() ([]time.Duration, error) {
			tr, err := transport.NewStreamableHTTP(url)
			if err != nil {
				return nil, err
			}
			c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
			defer c.Close()
			return timeCalls(ctx, c, *n)
		}},
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
	pathStdioDirect = "stdio, direct (mcp-go client and server)"
	pathStdioPump   = "stdio, through the raw pump"
	pathBridgeURL   = "bridge (--url, mcp-go stdio client)"
)

// printHTTPTable prints runHTTP's table: each path's median p50 and p99,
// the stdio hop's cost and the floor it makes with the direct client, and
// the bridge above that floor, each from paired rounds.
func printHTTPTable(w io.Writer, n, rounds int, p50, p99 map[string][]time.Duration) {
	// Per round: the stdio hop's cost, the floor, and the bridge above it.
	var hop, floor, above []time.Duration
	for r := range p50[pathBridgeURL] {
		h := p50[pathStdioPump][r] - p50[pathStdioDirect][r]
		f := p50[pathHTTPDirect][r] + h
		hop, floor, above = append(hop, h), append(floor, f), append(above, p50[pathBridgeURL][r]-f)
	}
	direct := median(p50[pathHTTPDirect])
	fmt.Fprintf(w, "tools/call round trip to a streamable-HTTP Go server in its own process; %d calls per row and round, %d paired rounds; medians of the rounds\n\n", n, rounds)
	fmt.Fprintln(w, "| path | p50 µs | p99 µs | p50 vs direct |")
	fmt.Fprintln(w, "|---|---|---|---|")
	row := func(name string, a, b time.Duration) {
		p99 := "—"
		if b > 0 {
			p99 = us(b)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× |\n", name, us(a), p99, float64(a)/float64(direct))
	}
	for _, name := range []string{pathHTTPDirect, pathStdioDirect, pathStdioPump} {
		row(name, median(p50[name]), median(p99[name]))
	}
	row("floor: direct + the stdio hop (pump − stdio direct)", median(floor), 0)
	row(pathBridgeURL, median(p50[pathBridgeURL]), median(p99[pathBridgeURL]))
	fmt.Fprintf(w, "\nthe stdio hop costs %s µs; the bridge's p50 is %s µs above the floor (median of paired rounds; the target is at most 50)\n", us(median(hop)), us(median(above)))
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

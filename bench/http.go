package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// runHTTP measures tools/call to a local streamable-HTTP Go server two ways
// in one run: a direct mcp-go streamable-HTTP client, and an mcp-go stdio
// client through the bridge fronting the server with --url.
func runHTTP(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	n := fs.Int("n", 2000, "calls per configuration and round")
	rounds := fs.Int("rounds", 3, "interleaved rounds; the table reports the median of the rounds' percentiles")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bridgeBin, _, _, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	ms := server.NewMCPServer("bench-http", "1.0.0", server.WithToolCapabilities(false))
	ms.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("message", "")), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(ln, server.NewStreamableHTTPServer(ms))
	url := "http://" + ln.Addr().String() + "/mcp"
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)

	direct := func() ([]time.Duration, error) {
		tr, err := transport.NewStreamableHTTP(url)
		if err != nil {
			return nil, err
		}
		c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
		defer c.Close()
		return timeCalls(ctx, c, *n)
	}
	bridged := func() ([]time.Duration, error) {
		c, err := client.NewStdioMCPClientWithOptions(bridgeBin, nil, []string{"--url", url, "--listen", "off", "--log-dir", logs, "--log-level", "error"})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		c = client.NewClient(c.GetTransport(), client.WithProtocolVersion("2025-11-25"))
		return timeCalls(ctx, c, *n)
	}
	p50 := map[string][]time.Duration{}
	p99 := map[string][]time.Duration{}
	for r := 0; r < *rounds; r++ {
		for _, cfg := range []struct {
			name string
			run  func() ([]time.Duration, error)
		}{{"direct (mcp-go streamable-HTTP client)", direct}, {"bridge (--url, stdio client)", bridged}} {
			lat, err := cfg.run()
			if err != nil {
				return fmt.Errorf("%s: %w", cfg.name, err)
			}
			sortDurations(lat)
			p50[cfg.name] = append(p50[cfg.name], percentile(lat, 50))
			p99[cfg.name] = append(p99[cfg.name], percentile(lat, 99))
		}
	}
	median := func(d []time.Duration) time.Duration { sortDurations(d); return d[len(d)/2] }
	fmt.Printf("tools/call round trip to a local streamable-HTTP Go server; %d calls × %d rounds per row, median of rounds\n\n", *n, *rounds)
	fmt.Println("| path | p50 µs | p99 µs | p50 vs direct |")
	fmt.Println("|---|---|---|---|")
	base := median(p50["direct (mcp-go streamable-HTTP client)"])
	for _, name := range []string{"direct (mcp-go streamable-HTTP client)", "bridge (--url, stdio client)"} {
		a, b := median(p50[name]), median(p99[name])
		fmt.Printf("| %s | %s | %s | %.2f× |\n", name, us(a), us(b), float64(a)/float64(base))
	}
	return nil
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

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// runProxy measures tools/call round trips to the same Go upstream three
// ways in one run: direct, through a raw byte pump, through the bridge.
func runProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	n := fs.Int("n", 3000, "calls per configuration")
	rounds := fs.Int("rounds", 3, "interleaved rounds; the table reports the median of the rounds' percentiles")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bridgeBin, serverBin, self, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)
	configs := []struct {
		name string
		argv []string
	}{
		{"direct", []string{serverBin}},
		{"raw pump", []string{self, "pump", serverBin}},
		{"bridge", []string{bridgeBin, "--log-dir", logs, "--log-level", "error", "--", serverBin}},
	}
	type key struct {
		cfg  string
		conc int
	}
	p50s := map[key][]time.Duration{}
	p99s := map[key][]time.Duration{}
	for r := 0; r < *rounds; r++ {
		for _, conc := range []int{1, 16} {
			for _, c := range configs {
				lat, err := measure(ctx, c.argv, conc, *n)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				sortDurations(lat)
				k := key{c.name, conc}
				p50s[k] = append(p50s[k], percentile(lat, 50))
				p99s[k] = append(p99s[k], percentile(lat, 99))
			}
		}
	}
	median := func(d []time.Duration) time.Duration { sortDurations(d); return d[len(d)/2] }
	fmt.Printf("tools/call round trip, mcp-go client → Go upstream over stdio; %d calls × %d rounds per row, median of rounds\n\n", *n, *rounds)
	fmt.Println("| callers | path | p50 µs | p99 µs | p50 vs direct | p50 above raw pump |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, conc := range []int{1, 16} {
		direct := median(p50s[key{"direct", conc}])
		floor := median(p50s[key{"raw pump", conc}])
		for _, c := range configs {
			p50 := median(p50s[key{c.name, conc}])
			p99 := median(p99s[key{c.name, conc}])
			above := "—"
			if c.name == "bridge" {
				above = us(p50-floor) + " µs"
			}
			fmt.Printf("| %d | %s | %s | %s | %.2f× | %s |\n", conc, c.name, us(p50), us(p99), float64(p50)/float64(direct), above)
		}
	}
	return nil
}

// measure spawns argv as an MCP server, initializes an mcp-go client and
// times n echo calls from conc concurrent callers.
func measure(ctx context.Context, argv []string, conc, n int) ([]time.Duration, error) {
	c, err := client.NewStdioMCPClientWithOptions(argv[0], nil, argv[1:])
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c = client.NewClient(c.GetTransport(), client.WithProtocolVersion("2025-11-25"))
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, err
	}
	call := func() (time.Duration, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"message": "ping"}
		t0 := time.Now()
		_, err := c.CallTool(ctx, req)
		return time.Since(t0), err
	}
	for i := 0; i < 200; i++ { // warm up
		if _, err := call(); err != nil {
			return nil, err
		}
	}
	out := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	per := n / conc
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, per)
			for i := 0; i < per; i++ {
				d, err := call()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				local = append(local, d)
			}
			mu.Lock()
			out = append(out, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, firstErr
}

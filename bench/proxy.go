package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// peerPair is a client and a server that talk MCP over stdio: measure
// times calls from the client to the server argv it spawns, and reads
// what the spawned process cost per timed call.
type peerPair struct {
	name    string
	server  []string
	measure func(ctx context.Context, argv []string, conc, n int) ([]time.Duration, callCost, error)
}

// runProxy measures tools/call round trips for two peer pairs, each three
// ways (direct, through a raw byte pump, through the bridge), in paired
// rounds: every round runs every configuration back to back (in the
// reverse order every other round), and the cost of the bridge is the
// median over rounds of its p50 minus the pump's p50 in the same round.
// With -base, the bridge of another checkout runs in the same rounds. Then it times a 64 MB result through the pump and
// through the bridge, with the middle process's peak RSS above idle.
func runProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	n := fs.Int("n", 3000, "calls per configuration and round")
	rounds := fs.Int("rounds", 5, "paired rounds")
	large := fs.Int("large", 64_000_000, "bytes of the large result (0 skips that table)")
	largeRounds := fs.Int("large-rounds", 5, "rounds of the large result")
	profile := fs.String("profile", "", "write a CPU profile of every bridge process to this folder (--cpuprofile), one file per run; merge them with go tool pprof")
	peers := fs.String("peers", "all", "the peer pairs: go (mcp-go), node (the TypeScript SDK) or all")
	callers := fs.String("callers", "1,16", "the numbers of concurrent callers, comma-separated")
	base := fs.String("base", "", "also measure the bridge built from this checkout (another branch's or commit's tree), in the same paired rounds, and report this tree's bridge against that one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := profileFolder(*profile); err != nil {
		return err
	}
	if *peers != "all" && *peers != "go" && *peers != "node" {
		return fmt.Errorf("-peers %q: want go, node or all", *peers)
	}
	concs, err := parseCallers(*callers)
	if err != nil {
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
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)
	var pairs []peerPair
	if *peers != "node" {
		pairs = append(pairs, peerPair{name: "mcp-go client → mcp-go server", server: []string{serverBin}, measure: measureGoCost})
	}
	if node, ok := nodePeers(); ok && *peers != "go" {
		pairs = append(pairs, peerPair{name: "TS SDK client → TS SDK server (Node)", server: []string{"node", node.server}, measure: node.measure})
	} else if !ok && *peers != "go" {
		fmt.Fprintln(os.Stderr, "bench: the TypeScript SDK pair is skipped: run npm ci --prefix internal/testpeers/npm")
	}
	runs := 0
	via := func(path string, server []string) []string {
		switch path {
		case pathPump:
			return append([]string{self, "pump"}, server...)
		case pathBridge:
			argv := []string{bridgeBin, "--listen", "off", "--log-dir", logs, "--log-level", "error"}
			if *profile != "" {
				runs++
				argv = append(argv, "--cpuprofile", filepath.Join(*profile, fmt.Sprintf("proxy-%03d.pprof", runs)))
			}
			return append(append(argv, "--"), server...)
		case pathBase:
			return append([]string{baseBin, "--listen", "off", "--log-dir", logs, "--log-level", "error", "--"}, server...)
		}
		return server
	}
	paths := []string{pathDirect, pathPump, pathBridge}
	if baseBin != "" {
		paths = append(paths, pathBase)
	}
	type key struct {
		pair, path string
		conc       int
	}
	p50s, p99s := map[key][]time.Duration{}, map[key][]time.Duration{}
	cpus, wakes := map[key][]time.Duration{}, map[key][]float64{}
	for r := 0; r < *rounds; r++ {
		for _, conc := range concs {
			for _, pp := range pairs {
				for _, path := range roundOrder(paths, r) {
					lat, cost, err := pp.measure(ctx, via(path, pp.server), conc, *n)
					if err != nil {
						return fmt.Errorf("%s, %s: %w", pp.name, path, err)
					}
					sortDurations(lat)
					k := key{pp.name, path, conc}
					p50s[k] = append(p50s[k], percentile(lat, 50))
					p99s[k] = append(p99s[k], percentile(lat, 99))
					cpus[k] = append(cpus[k], cost.cpu)
					wakes[k] = append(wakes[k], cost.runs)
				}
			}
		}
	}
	fmt.Printf("tools/call round trip over stdio; %d calls per row and round, %d paired rounds; medians of the rounds\n", *n, *rounds)
	fmt.Printf("CPU and runs: the spawned process's (the server, the pump or the bridge) per call, from the kernel's scheduler statistics\n\n")
	fmt.Println("| peers | callers | path | p50 µs | p99 µs | p50 vs direct | p50 above raw pump (median of paired rounds) | CPU µs per call | runs on a CPU per call |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, pp := range pairs {
		for _, conc := range concs {
			direct := median(p50s[key{pp.name, pathDirect, conc}])
			for _, path := range paths {
				k := key{pp.name, path, conc}
				above := "—"
				if path == pathBridge || path == pathBase {
					above = us(medianDiff(p50s[k], p50s[key{pp.name, pathPump, conc}])) + " µs"
				}
				p50 := median(p50s[k])
				fmt.Printf("| %s | %d | %s | %s | %s | %.2f× | %s | %s | %.2f |\n", pp.name, conc, path, us(p50), us(median(p99s[k])), float64(p50)/float64(direct), above, us(median(cpus[k])), medianFloat(wakes[k]))
			}
		}
	}
	if baseBin != "" {
		fmt.Printf("\nthis bridge against -base's, paired rounds (medians of the rounds' differences)\n\n")
		fmt.Println("| peers | callers | p50 µs apart | CPU µs per call apart | runs per call, this against -base |")
		fmt.Println("|---|---|---|---|---|")
		for _, pp := range pairs {
			for _, conc := range concs {
				a, b := key{pp.name, pathBridge, conc}, key{pp.name, pathBase, conc}
				fmt.Printf("| %s | %d | %s | %s | %.2f against %.2f |\n", pp.name, conc, us(medianDiff(p50s[a], p50s[b])),
					us(medianDiff(cpus[a], cpus[b])), medianFloat(wakes[a]), medianFloat(wakes[b]))
			}
		}
	}
	if *large > 0 {
		return runLarge(serverBin, self, bridgeBin, logs, *large, *largeRounds)
	}
	return nil
}

// The paths runProxy measures.
const (
	pathDirect = "direct"
	pathPump   = "raw pump"
	pathBridge = "bridge"
	pathBase   = "bridge of -base"
)

// roundOrder is the order round r measures the paths in: as given in
// even rounds, reversed in odd ones, so that a drift within a round (the
// peers warming, another load starting) weighs on every path alike
// rather than always on the last.
func roundOrder(paths []string, r int) []string {
	if r%2 == 0 {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[len(paths)-1-i] = p
	}
	return out
}

// parseCallers reads -callers: positive counts, comma-separated.
func parseCallers(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-callers %q: want positive counts separated by commas, e.g. 1,16", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// median returns the median of d, which it leaves in its order: the
// rounds' values are paired by index.
func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sortDurations(s)
	return s[len(s)/2]
}

// measureGoCost spawns argv as an MCP server, initializes an mcp-go
// client, times n echo calls from conc concurrent callers, and reads what
// the spawned process cost per timed call.
func measureGoCost(ctx context.Context, argv []string, conc, n int) ([]time.Duration, callCost, error) {
	c, cmd, err := spawnGo(argv)
	if err != nil {
		return nil, callCost{}, err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return nil, callCost{}, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, callCost{}, err
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
			return nil, callCost{}, err
		}
	}
	before, err := readSchedStat(cmd.Process.Pid)
	if err != nil {
		return nil, callCost{}, err
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
	if firstErr != nil {
		return nil, callCost{}, firstErr
	}
	after, err := readSchedStat(cmd.Process.Pid)
	if err != nil {
		return nil, callCost{}, err
	}
	cost := after.perCall(before, len(out))
	return out, cost, nil
}

// spawnGo spawns argv as a stdio MCP server of an mcp-go client, and
// returns the client (not yet initialized) and the spawned process.
func spawnGo(argv []string) (*client.Client, *exec.Cmd, error) {
	var cmd *exec.Cmd
	spawn := transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd = exec.CommandContext(ctx, command, args...)
		cmd.Env = append(os.Environ(), env...)
		return cmd, nil
	})
	c, err := client.NewStdioMCPClientWithOptions(argv[0], nil, argv[1:], spawn)
	if err != nil {
		return nil, nil, err
	}
	return client.NewClient(c.GetTransport(), client.WithProtocolVersion("2025-11-25")), cmd, nil
}

// nodeScripts are the TypeScript SDK peers of internal/testpeers/npm.
type nodeScripts struct{ client, server string }

// nodePeers finds the npm test peers, installed with npm ci.
func nodePeers() (nodeScripts, bool) {
	dir, err := filepath.Abs("internal/testpeers/npm")
	if err != nil {
		return nodeScripts{}, false
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		return nodeScripts{}, false
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nodeScripts{}, false
	}
	return nodeScripts{client: filepath.Join(dir, "bench-client.mjs"), server: filepath.Join(dir, "bench-server.mjs")}, true
}

// measure runs the TypeScript SDK client against argv and reads its
// round trips, and what the process it spawned cost per timed call: the
// client names that process before it times the calls and waits for a
// line on its stdin before it starts and before it closes.
func (s nodeScripts) measure(ctx context.Context, argv []string, conc, n int) ([]time.Duration, callCost, error) {
	cmd := exec.CommandContext(ctx, "node", append([]string{s.client, fmt.Sprint(n), fmt.Sprint(conc)}, argv...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, callCost{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, callCost{}, err
	}
	if err := cmd.Start(); err != nil {
		return nil, callCost{}, fmt.Errorf("the TypeScript SDK client: %w", err)
	}
	lat, cost, err := s.timed(bufio.NewReaderSize(stdout, 1<<20), stdin)
	stdin.Close()
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("the TypeScript SDK client: %w", werr)
	}
	return lat, cost, err
}

// timed reads, from the TypeScript SDK client's out, the spawned
// process's id and the round trips, releasing the client through in
// before and after its timed calls.
func (nodeScripts) timed(out *bufio.Reader, in io.Writer) ([]time.Duration, callCost, error) {
	line, err := out.ReadBytes('\n')
	var hello struct{ PID int }
	if err != nil || json.Unmarshal(line, &hello) != nil || hello.PID == 0 {
		return nil, callCost{}, fmt.Errorf("the TypeScript SDK client printed %.200q, not the spawned process's id: %v", line, err)
	}
	before, err := readSchedStat(hello.PID)
	if err != nil {
		return nil, callCost{}, err
	}
	if _, err := io.WriteString(in, "go\n"); err != nil {
		return nil, callCost{}, err
	}
	line, err = out.ReadBytes('\n')
	if err != nil {
		return nil, callCost{}, fmt.Errorf("the TypeScript SDK client printed %.200q: %w", line, err)
	}
	after, err := readSchedStat(hello.PID)
	if err != nil {
		return nil, callCost{}, err
	}
	io.WriteString(in, "done\n")
	var ns []int64
	if err := json.Unmarshal(line, &ns); err != nil {
		return nil, callCost{}, fmt.Errorf("the TypeScript SDK client printed %.200q: %w", line, err)
	}
	d := make([]time.Duration, len(ns))
	for i, v := range ns {
		d[i] = time.Duration(v)
	}
	cost := after.perCall(before, len(d))
	return d, cost, nil
}

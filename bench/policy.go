package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// policyShape is one column of the policy table: how many of a policy's
// rules evaluate a condition for the measured call.
type policyShape struct {
	name string
	// every: one rule in every matches the call by its patterns and
	// evaluates its (false) condition; 0 means no rule has a condition.
	every int
}

var policyShapes = []policyShape{
	{"patterns only", 0},
	{"1 rule in 10 evaluates CEL", 10},
	{"every rule evaluates CEL", 1},
}

// runPolicy measures policy.Decide for an allowed tools/call against
// policies of 10, 100 and 1,000 rules: in each round every configuration
// decides the same call, back to back, up to calls times or for budget,
// and the table shows
// the medians over rounds of the time per decision, with the allocations
// per decision. The call matches no rule, so every rule is tried before
// the default allows it: the most a policy of that size costs an allowed
// call.
func runPolicy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	calls := fs.Int("calls", 20_000, "decisions per configuration and round, at most")
	budget := fs.Duration("budget", 250*time.Millisecond, "time per configuration and round, at most (at least 10 decisions)")
	rounds := fs.Int("rounds", 7, "paired rounds")
	throughN := fs.Int("through-n", 2000, "tools/call round trips per configuration and round through the bridge (0 skips that table)")
	throughRounds := fs.Int("through-rounds", 5, "paired rounds through the bridge")
	profDir := fs.String("cpuprofile", "", "write a CPU profile of every bridge process the through-the-bridge table runs to this folder, one file per configuration and round (read them with go tool pprof)")
	base := fs.String("base", "", "also run the through-the-bridge table with the bridge built from this checkout (another branch's or commit's tree), in the same paired rounds, and report this tree's bridge against that one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := profileFolder(*profDir); err != nil {
		return err
	}
	sizes := []int{10, 100, 1000}
	call := policy.Call{Server: "app", Tool: "read_file", Client: "claude-code",
		Arguments: []byte(`{"environment":"production","replicas":3,"image":"registry.example/app:1.2.3","path":"/srv/app/config.yaml"}`)}
	type key struct{ size, shape int }
	pols := map[key]*policy.Policy{}
	allocs := map[key]float64{}
	for _, n := range sizes {
		for si, s := range policyShapes {
			p, err := policy.Parse([]byte(syntheticPolicy(n, s.every)))
			if err != nil {
				return fmt.Errorf("the %d-rule policy (%s): %w", n, s.name, err)
			}
			if d := p.Decide(call); d.Action != policy.Allow || d.Rule != "" || d.Fault != "" {
				return fmt.Errorf("the %d-rule policy (%s) decides the call %s by %q (%q); want the default allow", n, s.name, d.Action, d.Rule, d.Fault)
			}
			k := key{n, si}
			pols[k] = p
			allocs[k] = testing.AllocsPerRun(100, func() { p.Decide(call) })
		}
	}
	// The decisions run on one OS thread, so its CPU time is what they
	// cost even when other processes share the cores.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	per, cpu := map[key][]time.Duration{}, map[key][]time.Duration{}
	for range *rounds {
		for _, n := range sizes {
			for si := range policyShapes {
				k := key{n, si}
				p := pols[k]
				cpu0 := threadCPU()
				start := time.Now()
				n := 0
				for n < *calls && (n < 10 || time.Since(start) < *budget) {
					p.Decide(call)
					n++
				}
				per[k] = append(per[k], time.Since(start)/time.Duration(n))
				cpu[k] = append(cpu[k], (threadCPU()-cpu0)/time.Duration(n))
			}
		}
	}
	digest := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			policy.ArgsDigest(call.Arguments)
		}
	})
	fmt.Printf("policy.Decide for an allowed tools/call that no rule matches (every rule is tried); up to %d decisions or %s per cell and round, %d rounds; medians of the rounds\n", *calls, *budget, *rounds)
	fmt.Printf("each cell: wall time per decision, the deciding thread's CPU time per decision, allocations per decision\n\n")
	head := "| rules |"
	sep := "|---|"
	for _, s := range policyShapes {
		head += " " + s.name + " |"
		sep += "---|"
	}
	fmt.Println(head + " every rule CEL vs patterns only (CPU) |")
	fmt.Println(sep + "---|")
	for _, n := range sizes {
		row := fmt.Sprintf("| %d |", n)
		for si := range policyShapes {
			k := key{n, si}
			row += fmt.Sprintf(" %s µs, %s µs CPU (%.0f allocs) |", us(median(per[k])), us(median(cpu[k])), allocs[k])
		}
		ratio := "—" // too small to divide by
		if base := median(cpu[key{n, 0}]); base >= 50*time.Nanosecond {
			ratio = fmt.Sprintf("%.1f×", float64(median(cpu[key{n, 2}]))/float64(base))
		}
		fmt.Printf("%s %s |\n", row, ratio)
	}
	fmt.Printf("\nargs_digest of the call's %d-byte arguments: %s µs (%d allocs)\n", len(call.Arguments),
		us(time.Duration(digest.NsPerOp())), digest.AllocsPerOp())
	if *throughN > 0 {
		runtime.UnlockOSThread()
		return policyThrough(ctx, *throughN, *throughRounds, *profDir, *base)
	}
	return nil
}

// policyThrough measures what a policy adds to an allowed tools/call end
// to end: an mcp-go client calls the test server's echo tool over stdio
// through the bridge with no policy, and with 100-rule policies that allow
// the call by their default after trying every rule, in paired rounds
// (every configuration back to back in each round). The added cost is the
// median over rounds of the policy's p50 minus the no-policy p50 of the
// same round. It includes all the policy brings to an allowed call's
// path: reading the call's name and arguments, the duplicate-key check
// and the decision. Its tool.requested (with the arguments' digest) and
// tool.completed are emitted off that path, once the message is
// forwarded; the last column, the bridge's CPU per call, counts them.
//
// With profDir set, each bridge process writes its CPU profile there:
// config-C-round-R.pprof, C counting the table's rows from 0.
func policyThrough(ctx context.Context, n, rounds int, profDir, base string) error {
	bridgeBin, serverBin, _, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	bins := []string{bridgeBin}
	if base != "" {
		baseBin, err := buildBridgeFrom(base, filepath.Dir(bridgeBin))
		if err != nil {
			return err
		}
		bins = append(bins, baseBin)
	}
	dir, err := os.MkdirTemp("", "aep-bench-policy")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	configs := []struct{ name, policy string }{
		{"no policy", ""},
		{"100 rules, patterns only", echoPolicy(100, 0)},
		{"100 rules, 10 evaluate CEL", echoPolicy(100, 10)},
	}
	// runs are the bridges to measure in each round: every configuration
	// of this tree's bridge, then of -base's.
	type run struct{ bin, config int }
	var runs []run
	flags := make([][]string, len(configs)) // the configuration's flags
	for i, c := range configs {
		a := []string{"--listen", "off", "--log-dir", filepath.Join(dir, "logs"), "--log-level", "error"}
		if c.policy != "" {
			path := filepath.Join(dir, fmt.Sprintf("policy-%d.yaml", i))
			if err := os.WriteFile(path, []byte(c.policy), 0o600); err != nil {
				return err
			}
			p, err := policy.Parse([]byte(c.policy))
			if err != nil {
				return fmt.Errorf("the bench policy %q: %w", c.name, err)
			}
			if d := p.Decide(policy.Call{Server: "elicit-test-server", Tool: "echo", Arguments: []byte(`{"message":"ping"}`)}); d.Action != policy.Allow || d.Rule != "" || d.Fault != "" {
				return fmt.Errorf("the bench policy %q decides the call %s by %q (%q); want the default allow", c.name, d.Action, d.Rule, d.Fault)
			}
			a = append(a, "--policy", path)
		}
		flags[i] = a
	}
	for b := range bins {
		for i := range configs {
			runs = append(runs, run{b, i})
		}
	}
	p50s, p99s := make([][]time.Duration, len(runs)), make([][]time.Duration, len(runs))
	cpus := make([][]time.Duration, len(runs))
	for r := range rounds {
		// Every other round runs the bridges in reverse, so a drift
		// within a round does not land on the last one alone.
		order := make([]int, len(runs))
		for i := range order {
			order[i] = i
			if r%2 == 1 {
				order[i] = len(runs) - 1 - i
			}
		}
		for _, ri := range order {
			rn := runs[ri]
			a := append([]string{bins[rn.bin]}, flags[rn.config]...)
			if profDir != "" {
				prof := filepath.Join(profDir, fmt.Sprintf("bridge-%d-config-%d-round-%d.pprof", rn.bin, rn.config, r))
				a = append(a, "--cpuprofile", prof)
			}
			a = append(append(a, "--"), serverBin)
			lat, cost, err := measureGoCost(ctx, a, 1, n)
			if err != nil {
				return fmt.Errorf("through the bridge, %s: %w", configs[rn.config].name, err)
			}
			cpus[ri] = append(cpus[ri], cost.cpu)
			sortDurations(lat)
			p50s[ri] = append(p50s[ri], percentile(lat, 50))
			p99s[ri] = append(p99s[ri], percentile(lat, 99))
		}
	}
	fmt.Printf("\nan allowed tools/call through the bridge (mcp-go client → bridge → mcp-go server, stdio, one caller); %d calls per row and round, %d paired rounds; medians of the rounds\n\n", n, rounds)
	fmt.Println("the bridge's CPU per call is the bridge process's run time (schedstat) over the calls, divided by their number: the tool.* events an allowed call brings are emitted off its path, after the message is forwarded, so they cost CPU there, not p50, when a core is free")
	fmt.Println()
	fmt.Println("| bridge | p50 µs | p99 µs | p50 added vs no policy (median of paired rounds) | bridge CPU per call µs | CPU added vs no policy (median of paired rounds) |")
	fmt.Println("|---|---|---|---|---|---|")
	for ri, rn := range runs {
		name := configs[rn.config].name
		if rn.bin == 1 {
			name += " (-base)"
		}
		added, cpuAdded := "—", "—"
		if rn.config > 0 {
			none := ri - rn.config // the same bridge's run without a policy
			added = us(medianDiff(p50s[ri], p50s[none])) + " µs"
			cpuAdded = us(medianDiff(cpus[ri], cpus[none])) + " µs"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", name, us(median(p50s[ri])), us(median(p99s[ri])), added, us(median(cpus[ri])), cpuAdded)
	}
	if len(bins) > 1 {
		fmt.Printf("\nthis bridge against -base's, paired rounds (medians of the rounds' differences)\n\n")
		fmt.Println("| configuration | p50 µs apart | CPU µs per call apart |")
		fmt.Println("|---|---|---|")
		for i, c := range configs {
			a, b := i, len(configs)+i
			fmt.Printf("| %s | %s | %s |\n", c.name, us(medianDiff(p50s[a], p50s[b])), us(medianDiff(cpus[a], cpus[b])))
		}
	}
	return nil
}

// echoPolicy writes n rules that the bench's echo call (server
// elicit-test-server, arguments {"message":"ping"}) passes through to the
// default allow. With every > 0, one rule in every matches the call's
// tool and evaluates a condition on its message, which is false.
func echoPolicy(n, every int) string {
	var b strings.Builder
	b.WriteString("groups:\n  oncall: [alice, bob, carol]\nrules:\n")
	for i := range n {
		tool := fmt.Sprintf("tool_%d_*", i)
		if every > 0 && i%every == 0 {
			tool = "ech*"
		}
		fmt.Fprintf(&b, "  - id: r%d\n    server: ['srv-%d', 'elicit-*']\n    tool: '%s'\n", i, i%7, tool)
		if every > 0 {
			fmt.Fprintf(&b, "    when: 'args.message == \"deploy-%d\"'\n", i)
		}
		b.WriteString(benchActions[i%3])
	}
	return b.String()
}

// syntheticPolicy writes n rules that the bench call matches none of. Its
// server and tool patterns mix every kind the matcher has (literal,
// prefix, suffix, general); with every > 0 each rule has a condition on
// the arguments, and one rule in every matches the call's tool, so its
// condition is evaluated, and is false.
func syntheticPolicy(n, every int) string {
	var b strings.Builder
	b.WriteString("groups:\n  oncall: [alice, bob, carol]\nrules:\n")
	for i := range n {
		var tool string
		switch {
		case every > 0 && i%every == 0:
			tool = "read_*"
		case i%4 == 0:
			tool = fmt.Sprintf("tool_%d", i)
		case i%4 == 1:
			tool = fmt.Sprintf("tool_%d_*", i)
		case i%4 == 2:
			tool = fmt.Sprintf("*_%d", i)
		default:
			tool = fmt.Sprintf("t?ol_[0-9]*_%d", i)
		}
		fmt.Fprintf(&b, "  - id: r%d\n    server: ['srv-%d', 'app*']\n    tool: '%s'\n", i, i%7, tool)
		if every > 0 {
			fmt.Fprintf(&b, "    when: 'args.environment == \"production\" && args.replicas > %d'\n", 10+i)
		}
		b.WriteString(benchActions[i%3])
	}
	return b.String()
}

// benchActions are the actions of the bench policies' rules, in turn.
var benchActions = []string{
	"    action: deny\n    reason: not from an agent\n",
	"    action: ask\n    approvers: [group:oncall]\n    approvals: 2\n",
	"    action: allow\n",
}

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// threadCPU is the CPU time (user and system) the calling OS thread has
// used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

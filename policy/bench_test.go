package policy

import (
	"fmt"
	"strings"
	"testing"
)

// benchPolicy writes a policy of n rules that an allowed call to
// app/read_file passes through to the default allow. Its server and tool
// patterns mix every kind (literal, prefix, suffix, general). When
// evalEvery is above 0, every rule has a condition, and one rule in
// evalEvery also matches the call by its patterns, so its condition is
// evaluated (and is false): evalEvery 1 evaluates a condition at every
// rule.
func benchPolicy(n, evalEvery int) string {
	var b strings.Builder
	b.WriteString("groups:\n  oncall: [alice, bob, carol]\nrules:\n")
	for i := range n {
		tools := []string{
			fmt.Sprintf("tool_%d", i), fmt.Sprintf("tool_%d_*", i), fmt.Sprintf("*_%d", i), fmt.Sprintf("t?ol_[0-9]*_%d", i),
		}[i%4]
		if evalEvery > 0 && i%evalEvery == 0 {
			tools = "read_*"
		}
		fmt.Fprintf(&b, "  - id: r%d\n    server: ['srv-%d', 'app*']\n    tool: '%s'\n", i, i%7, tools)
		if evalEvery > 0 {
			fmt.Fprintf(&b, "    when: 'args.environment == \"production\" && args.replicas > %d'\n", 10+i)
		}
		switch i % 3 {
		case 0:
			b.WriteString("    action: deny\n    reason: not from an agent\n")
		case 1:
			b.WriteString("    action: ask\n    approvers: [group:oncall]\n    approvals: 2\n")
		default:
			b.WriteString("    action: allow\n")
		}
	}
	return b.String()
}

var benchCall = Call{Server: "app", Tool: "read_file", Client: "claude-code",
	Arguments: []byte(`{"environment":"production","replicas":3,"image":"registry.example/app:1.2.3","path":"/srv/app/config.yaml"}`)}

func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, c := range []struct {
			name  string
			every int
		}{{"globs", 0}, {"cel-1in10", 10}, {"cel-every", 1}} {
			b.Run(fmt.Sprintf("rules=%d/%s", n, c.name), func(b *testing.B) {
				p := mustParse(b, benchPolicy(n, c.every))
				if d := p.Decide(benchCall); d.Action != Allow || d.Rule != "" || d.Fault != "" {
					b.Fatalf("the bench call is decided %s by %q (%q); want the default allow", d.Action, d.Rule, d.Fault)
				}
				b.ReportAllocs()
				for b.Loop() {
					p.Decide(benchCall)
				}
			})
		}
	}
}

// BenchmarkArgsDigest digests the bench call's arguments as written (keys
// unsorted: the full reader) and as an encoder of a map writes them
// (keys sorted, no whitespace: already canonical, hashed as they are).
func BenchmarkArgsDigest(b *testing.B) {
	for _, c := range []struct{ name, args string }{
		{"as-written", string(benchCall.Arguments)},
		{"canonical", `{"environment":"production","image":"registry.example/app:1.2.3","path":"/srv/app/config.yaml","replicas":3}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := []byte(c.args)
			b.ReportAllocs()
			for b.Loop() {
				ArgsDigest(raw)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, n := range []int{100, 1000} {
		doc := []byte(benchPolicy(n, 1))
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

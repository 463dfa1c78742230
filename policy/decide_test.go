package policy

import (
	"strings"
	"testing"
)

// A condition that cannot be evaluated never makes a decision less
// cautious than either answer it could have given.
func TestDecideConditionFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rules    string
		args     string
		want     Action
		wantRule string
		// fault is a part of the Fault; "" wants none.
		fault string
	}{
		// A deny rule whose condition fails denies.
		{"deny: missing key", `
  - id: big
    when: 'args.replicas > 10'
    action: deny
    reason: too big`, `{}`, Deny, "big", "rule big: the condition could not be evaluated: no such key: replicas"},
		{"deny: wrong type", `
  - id: big
    when: 'args.replicas > 10'
    action: deny
    reason: too big`, `{"replicas":"many"}`, Deny, "big", "no such overload"},
		{"deny: condition true", `
  - id: big
    when: 'args.replicas > 10'
    action: deny
    reason: too big`, `{"replicas":11}`, Deny, "big", ""},
		{"deny: condition false", `
  - id: big
    when: 'args.replicas > 10'
    action: deny
    reason: too big`, `{"replicas":10}`, Allow, "", ""},
		// An allow rule whose condition fails does not apply.
		{"allow fails: later deny decides", `
  - id: small
    when: 'args.replicas < 3'
    action: allow
  - id: rest
    action: deny
    reason: no`, `{"replicas":"two"}`, Deny, "rest", "rule small:"},
		{"allow fails: default decides", `
  - id: small
    when: 'args.replicas < 3'
    action: allow`, `{}`, Allow, "", "rule small:"},
		// An ask rule whose condition fails asks, unless later rules deny.
		{"ask fails: later allow", `
  - id: prod
    when: 'args.env == "production"'
    action: ask
    approvers: alice
  - id: rest
    action: allow`, `{"region":"eu"}`, Ask, "prod", "rule prod:"},
		{"ask fails: later deny wins", `
  - id: prod
    when: 'args.env == "production"'
    action: ask
    approvers: alice
  - id: rest
    action: deny
    reason: no`, `{}`, Deny, "rest", "rule prod:"},
		{"ask fails: default allow", `
  - id: prod
    when: 'args.env == "production"'
    action: ask
    approvers: alice`, `{}`, Ask, "prod", "rule prod:"},
		{"ask fails: a later ask, the earlier rule asks", `
  - id: prod
    when: 'args.env == "production"'
    action: ask
    approvers: alice
  - id: any
    action: ask
    approvers: bob`, `{}`, Ask, "prod", "rule prod:"},
		{"ask fails, later deny condition fails too", `
  - id: prod
    when: 'args.env == "production"'
    action: ask
    approvers: alice
  - id: big
    when: 'args.replicas > 10'
    action: deny
    reason: no`, `{}`, Deny, "big", "rule prod:"},
		{"ask fails, later allow condition true", `
  - id: prod
    when: 'args.env == "production"'
    action: ask
    approvers: alice
  - id: small
    when: 'args.size < 3'
    action: allow`, `{"size": 1}`, Ask, "prod", "rule prod:"},
		// CEL's logic absorbs an error where the answer does not depend on it.
		{"false && error is false", `
  - id: r
    when: 'tool == "other" && args.replicas > 10'
    action: deny
    reason: no`, `{}`, Allow, "", ""},
		{"has() guards a missing key", `
  - id: r
    when: 'has(args.replicas) && args.replicas > 10'
    action: deny
    reason: no`, `{}`, Allow, "", ""},
		// Arguments that are not a readable object fail every condition
		// that reads them.
		{"duplicate key", `
  - id: prod
    when: 'args.env == "staging"'
    action: allow
  - id: rest
    action: deny
    reason: no`, `{"env":"staging","env":"production"}`, Deny, "rest", `the arguments repeat the key at $."env"`},
		{"not an object", `
  - id: r
    when: 'args.env == "x"'
    action: deny
    reason: no`, `["x"]`, Deny, "r", "the arguments are not a JSON object"},
		{"null", `
  - id: r
    when: 'size(args) == 0'
    action: deny
    reason: no`, `null`, Deny, "r", "the arguments are not a JSON object"},
		{"malformed", `
  - id: r
    when: 'size(args) > 0'
    action: deny
    reason: no`, `{"a":`, Deny, "r", "the arguments are not JSON: unexpected end at byte 5"},
		{"invalid UTF-8", `
  - id: r
    when: 'size(args) > 5'
    action: deny
    reason: no`, "{\"a\":\"\xff\"}", Deny, "r", "invalid UTF-8"},
		{"lone surrogate", `
  - id: r
    when: 'size(args) > 5'
    action: deny
    reason: no`, `{"a":"\ud800"}`, Deny, "r", "invalid UTF-8"},
		{"number beyond a double", `
  - id: r
    when: 'size(args) > 5'
    action: deny
    reason: no`, `{"a":1e400}`, Deny, "r", "beyond what a double can hold"},
		{"non-zero number rounding to 0", `
  - id: r
    when: 'size(args) > 5'
    action: deny
    reason: no`, `{"a":1e-400}`, Deny, "r", "too small for a double"},
		{"unreadable arguments, no condition reads them", `
  - id: r
    when: 'tool == "t"'
    action: deny
    reason: no`, `{"a":`, Deny, "r", ""},
		{"absent arguments read as {}", `
  - id: r
    when: 'size(args) == 0'
    action: deny
    reason: no`, ``, Deny, "r", ""},
		// The cost bound.
		{"cost limit", `
  - id: r
    when: 'args.s.split("").map(c, args.s.split("").exists(d, d == c + "!")).exists(b, b)'
    action: deny
    reason: no`, `{"s":"` + strings.Repeat("a", 600) + `"}`, Deny, "r", "cost limit exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustParse(t, "rules:"+tt.rules+"\n")
			d := p.Decide(Call{Server: "s", Tool: "t", Arguments: []byte(tt.args)})
			if d.Action != tt.want || d.Rule != tt.wantRule {
				t.Errorf("Decide = %s by rule %q (fault %q); want %s by rule %q", d.Action, d.Rule, d.Fault, tt.want, tt.wantRule)
			}
			switch {
			case tt.fault == "" && d.Fault != "":
				t.Errorf("Fault = %q; want none", d.Fault)
			case !strings.Contains(d.Fault, tt.fault):
				t.Errorf("Fault = %q; want it to contain %q", d.Fault, tt.fault)
			}
			if len(d.Fault) > MaxFaultLen+len("…") {
				t.Errorf("Fault is %d bytes; want at most %d", len(d.Fault), MaxFaultLen)
			}
		})
	}
}

// What conditions see: the arguments' JSON values as CEL values, and the
// call's server, tool and client.
func TestDecideConditionValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		when string
		args string
		want bool
	}{
		{`args.n == 1`, `{"n":1}`, true},
		{`args.n == 1`, `{"n":1.0}`, true},
		{`args.n == 1.0`, `{"n":1}`, true},
		{`args.n > 1.5`, `{"n":2}`, true},
		{`args.n > 1`, `{"n":1.5}`, true},
		{`args.n + 1 == 3`, `{"n":2}`, true},
		{`type(args.n) == int`, `{"n":9223372036854775807}`, true},
		{`type(args.n) == double`, `{"n":9223372036854775808}`, true},
		{`type(args.n) == double`, `{"n":1e2}`, true},
		{`args.n == -0`, `{"n":-0}`, true},
		{`args.s == "é/\n"`, `{"s":"\u00e9\/\n"}`, true},
		{`args.s == "😀"`, `{"s":"\ud83d\ude00"}`, true},
		{`args.b == true && args.z == null`, `{"b":true,"z":null}`, true},
		{`args.l.exists(x, x == "b") && size(args.l) == 2`, `{"l":["a","b"]}`, true},
		{`args.o.k.deep == [1, 2]`, `{"o":{"k":{"deep":[1,2]}}}`, true},
		{`args.name.startsWith("prod-") && args.name.lowerAscii().endsWith("-eu")`, `{"name":"prod-api-EU"}`, true},
		{`args.path.matches("^/etc/")`, `{"path":"/etc/passwd"}`, true},
		{`"force" in args && args.force`, `{"force":false}`, false},
		// CEL's == across types is false, not an error: 7 is not "production".
		{`args.env == "production"`, `{"env":7}`, false},
		{`server == "srv" && tool == "tl" && client == "cl"`, `{}`, true},
		{`args == {}`, ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.when, func(t *testing.T) {
			t.Parallel()
			p := mustParse(t, "rules:\n  - id: r\n    action: deny\n    reason: matched\n    when: '"+strings.ReplaceAll(tt.when, "'", "''")+"'\n")
			d := p.Decide(Call{Server: "srv", Tool: "tl", Client: "cl", Arguments: []byte(tt.args)})
			if d.Fault != "" {
				t.Fatalf("args %s: fault %q", tt.args, d.Fault)
			}
			if got := d.Action == Deny; got != tt.want {
				t.Errorf("args %s: condition = %v; want %v", tt.args, got, tt.want)
			}
		})
	}
}

// Decide reads the arguments only for a condition, and at most once.
func TestDecideReadsArgumentsLazily(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process's allocations.
	p := mustParse(t, "rules:\n  - tool: a\n    action: deny\n    reason: r\n  - tool: b\n    when: 'args.x == 1'\n    action: deny\n    reason: r\n")
	// Unreadable arguments do not matter to a rule without a condition.
	if d := p.Decide(Call{Tool: "a", Arguments: []byte(`{{{`)}); d.Action != Deny || d.Fault != "" {
		t.Errorf("Decide(a) = %s, fault %q; want deny without a fault", d.Action, d.Fault)
	}
	call := Call{Server: "s", Tool: "c", Client: "cl", Arguments: []byte(`{"x":1}`)}
	allocs := testing.AllocsPerRun(100, func() { p.Decide(call) })
	if allocs != 0 {
		t.Errorf("a decision that evaluates no condition allocates %.0f times; want 0", allocs)
	}
}

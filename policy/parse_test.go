package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// mustParse parses a policy a test relies on.
func mustParse(t testing.TB, doc string) *Policy {
	t.Helper()
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ignoreResolved leaves out an Approval's resolved sets, which the
// IsApprover tests check through behaviour.
var ignoreResolved = cmpopts.IgnoreUnexported(Approval{})

func TestParseExample(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"example.yaml", "example.json"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			data := readTestdata(t, file)
			p, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			sum := sha256.Sum256(data)
			if got, want := p.Revision(), "sha256:"+hex.EncodeToString(sum[:]); got != want {
				t.Errorf("Revision() = %s; want %s (the file's SHA-256)", got, want)
			}
			if diff := cmp.Diff([]string{"no-drop", "prod-deploy", "staging-deploy", "ci-reads", "ci-rest"}, p.RuleIDs()); diff != "" {
				t.Errorf("RuleIDs() (-want +got):\n%s", diff)
			}
			if p.Default() != Allow {
				t.Errorf("Default() = %s; want allow", p.Default())
			}
			rev := p.Revision()
			prod := &Approval{Approvers: []string{"group:oncall"}, Approvals: 2, Timeout: 15 * time.Minute, OnTimeout: Deny,
				Message: "A large production deploy needs two people."}
			staging := &Approval{Approvers: []string{"alice", "group:sre"}, Approvals: 1, Timeout: 5 * time.Minute, OnTimeout: Deny,
				Remember: RememberSession, RememberFor: 8 * time.Hour}
			tests := []struct {
				name string
				call Call
				want Decision
			}{
				{"deny by tool glob", Call{Server: "db", Tool: "drop_table"},
					Decision{Action: Deny, Rule: "no-drop", Revision: rev, Reason: "Dropping or truncating tables is not allowed from an agent; ask a DBA."}},
				{"second tool glob", Call{Server: "db", Tool: "truncate_logs"},
					Decision{Action: Deny, Rule: "no-drop", Revision: rev, Reason: "Dropping or truncating tables is not allowed from an agent; ask a DBA."}},
				{"condition true", Call{Server: "deploy-eu", Tool: "rollback", Arguments: []byte(`{"environment":"production","replicas":11}`)},
					Decision{Action: Ask, Rule: "prod-deploy", Revision: rev, Ask: prod}},
				{"condition false falls through", Call{Server: "deploy-eu", Tool: "deploy", Arguments: []byte(`{"environment":"production","replicas":10}`)},
					Decision{Action: Ask, Rule: "staging-deploy", Revision: rev, Ask: staging}},
				{"condition false, no later rule", Call{Server: "deploy-eu", Tool: "rollback", Arguments: []byte(`{"environment":"staging","replicas":50}`)},
					Decision{Action: Allow, Revision: rev}},
				{"server glob does not match", Call{Server: "build", Tool: "deploy", Arguments: []byte(`{"environment":"production","replicas":50}`)},
					Decision{Action: Allow, Revision: rev}},
				{"client glob allows", Call{Server: "db", Tool: "list_tables", Client: "ci-runner"},
					Decision{Action: Allow, Rule: "ci-reads", Revision: rev}},
				{"client glob denies", Call{Server: "db", Tool: "query", Client: "ci-runner"},
					Decision{Action: Deny, Rule: "ci-rest", Revision: rev, Reason: "CI clients may only read."}},
				{"no client name matches no client glob", Call{Server: "db", Tool: "query"},
					Decision{Action: Allow, Revision: rev}},
				{"no rule matches: default allow", Call{Server: "fs", Tool: "read_file"},
					Decision{Action: Allow, Revision: rev}},
			}
			for _, tt := range tests {
				got := p.Decide(tt.call)
				if tt.want.Rule != "" && got.RuleHash == "" {
					t.Errorf("%s: a rule decided but RuleHash is empty", tt.name)
				}
				got.RuleHash = ""
				if diff := cmp.Diff(tt.want, got, ignoreResolved); diff != "" {
					t.Errorf("%s: Decide (-want +got):\n%s", tt.name, diff)
				}
			}
		})
	}
}

// The same rules written as YAML and as JSON are the same rules: each
// rule's hash is the same, though the revisions (hashes of the bytes)
// differ.
func TestRuleHashIsTheRulesMeaning(t *testing.T) {
	t.Parallel()
	y, err := Parse(readTestdata(t, "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := Parse(readTestdata(t, "example.json"))
	if err != nil {
		t.Fatal(err)
	}
	if y.Revision() == j.Revision() {
		t.Errorf("the YAML and JSON files have one revision %s; want the hashes of their different bytes", y.Revision())
	}
	seen := map[string]bool{}
	for i := range y.rules {
		yh, jh := y.rules[i].decision.RuleHash, j.rules[i].decision.RuleHash
		if yh != jh {
			t.Errorf("rule %s: hash %s from YAML, %s from JSON; want one", y.rules[i].decision.Rule, yh, jh)
		}
		if seen[yh] {
			t.Errorf("rule %s: its hash is another rule's", y.rules[i].decision.Rule)
		}
		seen[yh] = true
	}

	// A change to a group's members changes the hash of the rules that
	// use the group, and of no other.
	edited := strings.Replace(string(readTestdata(t, "example.yaml")), "oncall: [alice, bob, carol]", "oncall: [alice, bob, erin]", 1)
	e := mustParse(t, edited)
	for i := range y.rules {
		id := y.rules[i].decision.Rule
		changed := y.rules[i].decision.RuleHash != e.rules[i].decision.RuleHash
		if want := id == "prod-deploy"; changed != want {
			t.Errorf("rule %s: hash changed = %v after editing group oncall; want %v", id, changed, want)
		}
	}
	// Comments and layout change the revision, not the rules.
	c := mustParse(t, "# a new comment\n"+string(readTestdata(t, "example.yaml")))
	if c.Revision() == y.Revision() {
		t.Error("adding a comment left the revision unchanged; want the hash of the new bytes")
	}
	for i := range y.rules {
		if c.rules[i].decision.RuleHash != y.rules[i].decision.RuleHash {
			t.Errorf("rule %s: a comment changed its hash", y.rules[i].decision.Rule)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `
default: deny
rules:
  - tool: echo
    action: allow
  - tool: ask_me
    action: ask
    approvers: alice
`)
	if got := p.RuleIDs(); !cmp.Equal(got, []string{"#1", "#2"}) {
		t.Errorf("RuleIDs() = %v; want rules without ids named #1, #2", got)
	}
	d := p.Decide(Call{Tool: "other"})
	if d.Action != Deny || d.Reason != DefaultDenyReason || d.Rule != "" {
		t.Errorf("Decide(other) = %+v; want the default deny with %q and no rule", d, DefaultDenyReason)
	}
	a := p.Decide(Call{Tool: "ask_me"}).Ask
	want := &Approval{Approvers: []string{"alice"}, Approvals: 1, Timeout: DefaultTimeout, OnTimeout: Deny}
	if diff := cmp.Diff(want, a, ignoreResolved); diff != "" {
		t.Errorf("an ask rule's defaults (-want +got):\n%s", diff)
	}
	r := mustParse(t, "default: deny\ndefault_reason: Only listed tools.\nrules: []\n")
	if d := r.Decide(Call{Tool: "x"}); d.Reason != "Only listed tools." {
		t.Errorf("default_reason: got reason %q; want %q", d.Reason, "Only listed tools.")
	}
	if d := mustParse(t, "rules: []").Decide(Call{Tool: "x"}); d.Action != Allow {
		t.Errorf("rules: [] decides %s; want allow", d.Action)
	}
}

func TestParseForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		call Call
		want Action
	}{
		{"JSON with a \\/ escape (not YAML)", `{"rules":[{"tool":"a\/b","action":"deny","reason":"r"}]}`, Call{Tool: "a/b"}, Deny},
		{"YAML flow mapping", `{rules: [{tool: x, action: deny, reason: r}]}`, Call{Tool: "x"}, Deny},
		{"byte order mark", "\xef\xbb\xbfrules:\n  - tool: x\n    action: deny\n    reason: r\n", Call{Tool: "x"}, Deny},
		{"numeric tool name taken as written", "rules:\n  - tool: 007\n    action: deny\n    reason: r\n", Call{Tool: "007"}, Deny},
		{"JSON tabs and CRLF", "{\r\n\t\"rules\": [\r\n\t\t{\"tool\": \"x\", \"action\": \"deny\", \"reason\": \"r\"}\r\n\t]\r\n}\r\n", Call{Tool: "x"}, Deny},
		{"remember: never", "rules:\n  - action: ask\n    approvers: a\n    remember: never\n", Call{Tool: "x"}, Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustParse(t, tt.doc)
			if got := p.Decide(tt.call).Action; got != tt.want {
				t.Errorf("Decide = %s; want %s", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"empty", "", []string{"the file is empty; a policy needs at least `rules:` (write `rules: []` to allow every call)"}},
		{"only a comment", "# nothing\n", []string{"the file holds no YAML document; a policy needs at least `rules:`"}},
		{"a list", "- a\n- b\n", []string{"line 1: the policy must be a mapping of fields (version, default, default_reason, groups, rules)"}},
		{"no rules", "default: allow\n", []string{"line 1: the policy has no `rules:`; write the rules (or `rules: []` to allow every call)"}},
		{"rules null", "rules:\n", []string{"line 1: rules: is empty; list the rules (or write `rules: []` to allow every call)"}},
		{"rules a mapping", "rules:\n  a: b\n", []string{"line 2: rules: must be a list of rules, each starting with `- `"}},
		{"unknown top field", "rules: []\nrule: []\n", []string{`line 2: unknown field "rule" in the policy; the fields are version, default, default_reason, groups, rules`}},
		{"version 2", "version: 2\nrules: []\n", []string{"line 1: version: this bridge reads policy version 1; 2 is newer or unknown"}},
		{"bad default", "default: ask\nrules: []\n", []string{`line 1: default: "ask" is not allow or deny`}},
		{"default_reason without deny", "default_reason: x\nrules: []\n", []string{"line 1: default_reason: applies only with `default: deny`; remove it or set default: deny"}},
		{"not YAML", "rules: [\n", []string{"the file is not valid YAML: line 1: did not find expected node content"}},
		{"not JSON", `{"rules": [}`, []string{`line 1: the file is not valid JSON: invalid character '}' looking for beginning of value`}},
		{"two documents", "rules: []\n---\nrules: []\n", []string{"the file holds more than one YAML document (a second ---); keep one policy in the file"}},
		{"JSON after its end", `{"rules": []} {}`, []string{"the JSON document has more after its end; keep one object in the file"}},
		{"rule not a mapping", "rules:\n  - deny\n", []string{"line 2: rule 1: a rule must be a mapping of fields (id, server, tool, client, when, action, reason, approvers, approvals, timeout, on_timeout, remember, remember_for, message)"}},
		{"unknown rule field", "rules:\n  - id: r\n    action: allow\n    tools: x\n", []string{`line 4: rule 1 "r": unknown field "tools" in a rule; the fields are id, server, tool, client, when, action, reason, approvers, approvals, timeout, on_timeout, remember, remember_for, message`}},
		{"field written twice", "rules:\n  - id: r\n    action: allow\n    tool: a\n    tool: b\n", []string{`line 5: rule 1 "r": tool: written twice (first on line 4); keep one`}},
		{"JSON field written twice", `{"rules": [{"id": "r", "action": "allow",
"tool": "a", "tool": "b"}]}`, []string{`line 2: rule 1 "r": tool: written twice (first on line 2); keep one`}},
		{"duplicate ids", "rules:\n  - id: r\n    action: allow\n  - id: r\n    action: allow\n", []string{`line 4: rule 2 "r": id: rule 1 has the same id; give each rule its own`}},
		{"bad id", "rules:\n  - id: 'a b'\n    action: allow\n", []string{`line 2: rule 1: id: "a b" may hold only letters, digits, '-', '_' and '.' (ASCII), starting with a letter or digit`}},
		{"id with #", "rules:\n  - id: '#1'\n    action: allow\n", []string{`line 2: rule 1: id: "#1" may hold only letters, digits, '-', '_' and '.' (ASCII), starting with a letter or digit`}},
		{"no action", "rules:\n  - id: r\n    tool: x\n", []string{`line 2: rule 1 "r": the rule has no action; write action: allow, deny or ask`}},
		{"bad action", "rules:\n  - action: permit\n", []string{`line 2: rule 1: action: "permit" is not allow, deny or ask`}},
		{"deny without reason", "rules:\n  - id: r\n    action: deny\n", []string{`line 2: rule 1 "r": a deny rule needs a reason, which the model reads; add reason: …`}},
		{"empty reason", "rules:\n  - action: deny\n    reason: '  '\n", []string{`line 3: rule 1: reason: is empty; write the text, or leave the field out`}},
		{"reason on allow", "rules:\n  - action: allow\n    reason: x\n", []string{`line 3: rule 1: reason: applies only to deny rules, not to action: allow; remove it`}},
		{"approvers on deny", "rules:\n  - action: deny\n    reason: x\n    approvers: [a]\n", []string{`line 4: rule 1: approvers: applies only to ask rules, not to action: deny; remove it`}},
		{"ask without approvers", "rules:\n  - id: r\n    action: ask\n", []string{`line 2: rule 1 "r": an ask rule needs approvers: operator names or group:NAME`}},
		{"approvals 0", "rules:\n  - id: r\n    action: ask\n    approvers: [a, b]\n    approvals: 0\n", []string{`line 5: rule 1 "r": approvals: must be 1 or more`}},
		{"approvals text", "rules:\n  - id: r\n    action: ask\n    approvers: [a, b]\n    approvals: two\n", []string{`line 5: rule 1 "r": approvals: must be a whole number, like 2`}},
		{"approvals more than names", "rules:\n  - id: r\n    action: ask\n    approvers: [alice, bob]\n    approvals: 3\n",
			[]string{`line 5: rule 1 "r": approvals: 3 distinct approvers must allow, but only 2 could ever approve (alice, bob); lower approvals or add approvers`}},
		{"approvals more than distinct members", "groups:\n  g: [alice, bob]\nrules:\n  - id: r\n    action: ask\n    approvers: [alice, group:g]\n    approvals: 3\n",
			[]string{`line 7: rule 1 "r": approvals: 3 distinct approvers must allow, but only 2 could ever approve (alice, bob); lower approvals or add approvers`}},
		{"undefined group", "rules:\n  - id: r\n    action: ask\n    approvers: [group:oncall]\n", []string{`line 4: rule 1 "r": approvers: the group "oncall" is not defined; define it under groups:, or fix the name`}},
		{"approver twice", "rules:\n  - action: ask\n    approvers: [a, a]\n", []string{`line 3: rule 1: approvers: "a" is listed twice; keep one`}},
		{"approver name with a control character", "rules:\n  - action: ask\n    approvers: [\"a\\tb\"]\n", []string{`line 3: rule 1: approvers: the operator name "a\tb" holds a control or invisible character`}},
		{"group without members", "groups:\n  g:\n    identity: false\nrules: []\n", []string{"line 3: groups.g: the group has no members; list them under members, or set identity: true"}},
		{"group of groups", "groups:\n  g: [group:h]\nrules: []\n", []string{`line 2: groups.g: "group:h": a group cannot hold a group; list its members`}},
		{"group defined twice", "groups:\n  g: [a]\n  g: [b]\nrules: []\n", []string{"line 3: groups.g: the group is defined twice; keep one"}},
		{"group unknown field", "groups:\n  g:\n    member: [a]\nrules: []\n", []string{
			`line 3: groups.g: unknown field "member" in a group; the fields are members, identity`,
			"line 3: groups.g: the group has no members; list them under members, or set identity: true"}},
		{"group with no-one", "groups:\n  g: []\nrules:\n  - action: ask\n    approvers: group:g\n", []string{
			"line 2: groups.g: is an empty list; list at least one value, or leave the field out",
			"line 5: rule 1: approvers: no operator could ever approve: the groups listed have no members; add members or approvers"}},
		{"empty glob", "rules:\n  - tool: ''\n    action: allow\n", []string{`line 2: rule 1: tool: "": the pattern is empty; write * to match every name`}},
		{"unclosed bracket", "rules:\n  - server: 'db-[ab'\n    action: allow\n", []string{`line 2: rule 1: server: "db-[ab": the pattern has a [ with no ] after it; write \[ for the character itself`}},
		{"stray bracket", "rules:\n  - tool: 'a]'\n    action: allow\n", []string{`line 2: rule 1: tool: "a]": the pattern has a ] with no [ before it; write \] for the character itself`}},
		{"backwards range", "rules:\n  - client: '[z-a]'\n    action: allow\n", []string{`line 2: rule 1: client: "[z-a]": the pattern has the range z-a, which is backwards; write a-z`}},
		{"lone backslash", "rules:\n  - tool: 'a\\'\n    action: allow\n", []string{`line 2: rule 1: tool: "a\\": the pattern ends in a lone \; write \\ for a backslash`}},
		{"empty glob list", "rules:\n  - tool: []\n    action: allow\n", []string{`line 2: rule 1: tool: is an empty list; list at least one value, or leave the field out`}},
		{"boolean tool", "rules:\n  - tool: true\n    action: allow\n", []string{`line 2: rule 1: tool: is the boolean true; quote it if you mean the text`}},
		{"null tool", "rules:\n  - tool:\n    action: allow\n", []string{`line 2: rule 1: tool: has no value; write one, or leave the field out`}},
		{"CEL does not compile", "rules:\n  - when: 'args.x =='\n    action: allow\n", []string{"line 2: rule 1: when: the condition does not compile: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | args.x ==\n | .........^"}},
		{"CEL not bool", "rules:\n  - when: 'args.dry_run'\n    action: allow\n", []string{"line 2: rule 1: when: the condition gives dyn, not bool; compare a value, like args.dry_run == true"}},
		{"CEL string", "rules:\n  - when: 'tool + \"x\"'\n    action: allow\n", []string{"line 2: rule 1: when: the condition gives string, not bool; compare a value, like args.dry_run == true"}},
		{"CEL unknown variable", "rules:\n  - when: 'arguments.x == 1'\n    action: allow\n", []string{"line 2: rule 1: when: the condition does not compile: ERROR: <input>:1:1: undeclared reference to 'arguments'\n | arguments.x == 1\n | ^"}},
		{"CEL type error", "rules:\n  - when: 'tool > 1'\n    action: allow\n", []string{"line 2: rule 1: when: the condition does not compile: ERROR: <input>:1:6: found no matching overload for '_>_' applied to '(string, int)'\n | tool > 1\n | .....^"}},
		{"empty CEL", "rules:\n  - when: ''\n    action: allow\n", []string{"line 2: rule 1: when: is empty; write a condition, or leave the field out"}},
		{"timeout without unit", "rules:\n  - action: ask\n    approvers: a\n    timeout: 60\n", []string{"line 4: rule 1: timeout: 60 has no unit; write a duration like 60s or 15m"}},
		{"timeout not a duration", "rules:\n  - action: ask\n    approvers: a\n    timeout: soon\n", []string{`line 4: rule 1: timeout: "soon" is not a duration; write one like 90s, 15m or 2h`}},
		{"timeout negative", "rules:\n  - action: ask\n    approvers: a\n    timeout: -1m\n", []string{"line 4: rule 1: timeout: must be longer than 0"}},
		{"timeout too long", "rules:\n  - action: ask\n    approvers: a\n    timeout: 200h\n", []string{"line 4: rule 1: timeout: 200h0m0s is longer than the 168h0m0s allowed"}},
		{"on_timeout ask", "rules:\n  - action: ask\n    approvers: a\n    on_timeout: ask\n", []string{`line 4: rule 1: on_timeout: "ask" is not deny or allow`}},
		{"remember forever", "rules:\n  - action: ask\n    approvers: a\n    remember: forever\n", []string{`line 4: rule 1: remember: "forever" is not session or never`}},
		{"remember_for without remember", "rules:\n  - action: ask\n    approvers: a\n    remember_for: 1h\n", []string{"line 4: rule 1: remember_for: applies only with remember: session; add it, or remove remember_for"}},
		{"alias", "rules:\n  - tool: &t x\n    action: allow\n  - tool: *t\n    action: allow\n", []string{"line 4: rule 2: tool: anchors and aliases (*name) are not allowed in a policy; write the value out"}},
		{"several problems, in file order", "rules:\n  - id: a\n    action: ask\n    approvers: [group:x]\n    approvals: 0\n    colour: red\n  - id: b\n    action: nope\n", []string{
			`line 4: rule 1 "a": approvers: the group "x" is not defined; define it under groups:, or fix the name`,
			`line 5: rule 1 "a": approvals: must be 1 or more`,
			`line 6: rule 1 "a": unknown field "colour" in a rule; the fields are id, server, tool, client, when, action, reason, approvers, approvals, timeout, on_timeout, remember, remember_for, message`,
			`line 8: rule 2 "b": action: "nope" is not allow, deny or ask`}},
		{"too large", "rules: []\n#" + strings.Repeat("x", MaxPolicyBytes), []string{fmt.Sprintf("the file is %d bytes, over the %d a policy may have", MaxPolicyBytes+11, MaxPolicyBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse([]byte(tt.doc))
			if p != nil {
				t.Errorf("Parse returned a policy with its error; want nil")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error = %v (%T); want a *ParseError", err, err)
			}
			var got []string
			for _, pr := range pe.Problems {
				got = append(got, pr.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrorText(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte("rules:\n  - id: r\n    action: deny\n"))
	want := `the policy did not load: line 2: rule 1 "r": a deny rule needs a reason, which the model reads; add reason: …`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v; want %s", err, want)
	}
	var doc strings.Builder
	doc.WriteString("rules:\n")
	for range 25 {
		doc.WriteString("  - action: nope\n")
	}
	_, err = Parse([]byte(doc.String()))
	var pe *ParseError
	if !errors.As(err, &pe) || len(pe.Problems) != 20 || pe.More != 5 {
		t.Fatalf("25 bad rules: got %v; want 20 problems listed and 5 more", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if lines[0] != "the policy did not load: 25 problems" || lines[len(lines)-1] != "  … and 5 more" {
		t.Errorf("error text starts %q and ends %q; want the count first and the rest counted last", lines[0], lines[len(lines)-1])
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	var doc strings.Builder
	doc.WriteString("rules:\n")
	for range MaxRules + 1 {
		doc.WriteString("- {action: allow}\n")
	}
	_, err := Parse([]byte(doc.String()))
	if want := fmt.Sprintf("rules: %d rules is more than the %d allowed", MaxRules+1, MaxRules); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("too many rules: error %v; want it to say %q", err, want)
	}
	long := strings.Repeat("1 == 1 && ", MaxConditionLen/10+1) + "true"
	_, err = Parse([]byte("rules:\n  - action: allow\n    when: '" + long + "'\n"))
	if want := "expression code point size exceeds limit"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a long condition: error %v; want it to say %q", err, want)
	}
	deep := strings.Repeat("(", 40) + "true" + strings.Repeat(")", 40)
	_, err = Parse([]byte("rules:\n  - action: allow\n    when: '" + deep + "'\n"))
	if want := "expression recursion limit exceeded"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a deep condition: error %v; want it to say %q", err, want)
	}
	// A JSON document nested beyond any policy's shape.
	_, err = Parse([]byte(`{"rules":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`))
	if err == nil {
		t.Error("a JSON document nested 100 deep loaded")
	}
}

// Identity groups have no fixed members, so approvals are not bounded by
// a count of names.
func TestParseIdentityGroup(t *testing.T) {
	t.Parallel()
	p := mustParse(t, "groups:\n  sre:\n    identity: true\nrules:\n  - action: ask\n    approvers: group:sre\n    approvals: 3\n")
	a := p.Decide(Call{Tool: "x"}).Ask
	if a == nil || a.Approvals != 3 {
		t.Fatalf("Decide: Ask = %+v; want 3 approvals", a)
	}
	if !a.IsApprover(Actor{Name: "zoe", Groups: []string{"sre"}}) {
		t.Error("an operator whose identity is in group sre is not an approver of group:sre (identity: true)")
	}
	if a.IsApprover(Actor{Name: "zoe", Groups: []string{"dev"}}) {
		t.Error("an operator outside group sre is an approver")
	}
}

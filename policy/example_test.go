package policy_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

const doc = `
groups:
  oncall: [alice, bob, carol]
rules:
  - id: no-drop
    tool: "drop_*"
    action: deny
    reason: Dropping tables is not allowed from an agent.
  - id: prod-deploy
    server: "deploy-*"
    tool: deploy
    when: 'args.environment == "production" && args.replicas > 10'
    action: ask
    approvers: [group:oncall]
    approvals: 2
    timeout: 15m
    remember: session
`

func ExamplePolicy_Decide() {
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []policy.Call{
		{Server: "db", Tool: "drop_users"},
		{Server: "deploy-eu", Tool: "deploy", Arguments: []byte(`{"environment":"production","replicas":12}`)},
		{Server: "deploy-eu", Tool: "deploy", Arguments: []byte(`{"environment":"production","replicas":2}`)},
		// replicas is missing: the ask rule's condition cannot be evaluated,
		// so the call is asked about rather than allowed.
		{Server: "deploy-eu", Tool: "deploy", Arguments: []byte(`{"environment":"production"}`)},
	} {
		d := p.Decide(c)
		switch d.Action {
		case policy.Deny:
			fmt.Printf("%s: deny by %s: %s\n", c.Tool, d.Rule, d.Reason)
		case policy.Ask:
			fmt.Printf("%s: ask by %s: %d of %v within %s (fault: %q)\n", c.Tool, d.Rule, d.Ask.Approvals, d.Ask.Approvers, d.Ask.Timeout, d.Fault)
		default:
			fmt.Printf("%s: allow (rule %q)\n", c.Tool, d.Rule)
		}
	}
	// Output:
	// drop_users: deny by no-drop: Dropping tables is not allowed from an agent.
	// deploy: ask by prod-deploy: 2 of [group:oncall] within 15m0s (fault: "")
	// deploy: allow (rule "")
	// deploy: ask by prod-deploy: 2 of [group:oncall] within 15m0s (fault: "rule prod-deploy: the condition could not be evaluated: no such key: replicas")
}

func ExampleParse() {
	_, err := policy.Parse([]byte(`
rules:
  - id: deploy
    action: ask
    approvers: [alice, group:oncall]
    approvals: 3
    timeout: 90
`))
	fmt.Println(err)
	var pe *policy.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Problems[0].Line, pe.Problems[0].RuleID, pe.Problems[0].Field)
	}
	// Output:
	// the policy did not load: 2 problems
	//   line 5: rule 1 "deploy": approvers: the group "oncall" is not defined; define it under groups:, or fix the name
	//   line 7: rule 1 "deploy": timeout: 90 has no unit; write a duration like 90s or 15m
	// 5 deploy approvers
}

func ExampleArgsDigest() {
	fmt.Println(policy.ArgsDigest([]byte(`{"replicas": 12, "environment": "production"}`)))
	fmt.Println(policy.ArgsDigest([]byte(`{"environment":"production","replicas":12}`)))
	canon, _ := policy.CanonicalArgs([]byte(`{"replicas": 12, "environment": "production"}`))
	fmt.Println(string(canon))
	// The digest is the SHA-256 of the canonical JSON, so
	//   printf '%s' '{"environment":"production","replicas":12}' | sha256sum
	// gives it too.
	// Output:
	// sha256:6b4f247c181c051c4ead7d662c81ee4bede966624e25e8137804e1a7839c7757
	// sha256:6b4f247c181c051c4ead7d662c81ee4bede966624e25e8137804e1a7839c7757
	// {"environment":"production","replicas":12}
}

func ExampleHold() {
	p, _ := policy.Parse([]byte(doc))
	args := []byte(`{"environment":"production","replicas":12}`)
	d := p.Decide(policy.Call{Server: "deploy-eu", Tool: "deploy", Arguments: args})
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	h, _ := policy.NewHold(d, "session-1", policy.ArgsDigest(args), start)

	for _, v := range []policy.Vote{
		{Actor: policy.Actor{Name: "mallory"}, Verdict: policy.VerdictAllow},
		{Actor: policy.Actor{Name: "alice"}, Verdict: policy.VerdictAllow},
		{Actor: policy.Actor{Name: "alice"}, Verdict: policy.VerdictAllow},
		{Actor: policy.Actor{Name: "bob"}, Verdict: policy.VerdictAllow},
	} {
		out, err := h.Vote(v, start.Add(time.Minute))
		var r *policy.Refusal
		if errors.As(err, &r) {
			fmt.Printf("%s: refused (%s): %v\n", v.Actor.Name, r.NackReason(), r)
			continue
		}
		fmt.Printf("%s: %s, %d of %d\n", v.Actor.Name, out.State, len(out.Approved), out.Needed)
	}
	g := h.Outcome().Grant
	fmt.Println(g.Scope, g.By, g.Rule, g.Digest == policy.ArgsDigest(args))
	// Output:
	// mallory: refused (unauthorized): operator "mallory" is not an approver of rule "prod-deploy" (approvers: group:oncall); ask one of them
	// alice: pending, 1 of 2
	// alice: refused (refused): operator "alice" has already approved this call; 1 of 2 approvals, another approver must allow
	// bob: allowed, 2 of 2
	// call [alice bob] prod-deploy true
}

func ExampleMemory() {
	p, _ := policy.Parse([]byte(doc))
	args := []byte(`{"environment":"production","replicas":12}`)
	call := policy.Call{Server: "deploy-eu", Tool: "deploy", Arguments: args}
	digest := policy.ArgsDigest(args)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	mem := policy.NewMemory(0)

	d := p.Decide(call)
	h, _ := policy.NewHold(d, "session-1", digest, now)
	h.Vote(policy.Vote{Actor: policy.Actor{Name: "alice"}, Verdict: policy.VerdictAllowSession}, now)
	out, _ := h.Vote(policy.Vote{Actor: policy.Actor{Name: "carol"}, Verdict: policy.VerdictAllowSession}, now)
	mem.Remember(out.Grant)

	// The same call later in the session passes; in another session, or
	// with other arguments, it asks again.
	_, again := mem.Lookup(p.Decide(call), "session-1", digest, now.Add(time.Hour))
	_, other := mem.Lookup(p.Decide(call), "session-2", digest, now.Add(time.Hour))
	fmt.Println(out.Grant.Scope, again, other)
	// Output: session true false
}

func ExampleReloader() {
	r, err := policy.NewReloader([]byte("rules:\n  - id: all\n    action: allow\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _, err = r.Load([]byte("rules:\n  - id: all\n    action: alow\n"))
	fmt.Println(err)
	fmt.Println(r.Policy().Decide(policy.Call{Tool: "x"}).Rule)
	// Output:
	// the policy did not load: line 3: rule 1 "all": action: "alow" is not allow, deny or ask
	// all
}

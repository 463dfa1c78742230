package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Bounds and defaults of a policy document.
const (
	// MaxPolicyBytes is the largest policy document.
	MaxPolicyBytes = 4 << 20
	// MaxRules is the most rules a policy may have.
	MaxRules = 10_000
	// MaxNameLen bounds operator names, in bytes.
	MaxNameLen = 128
	// MaxIDLen bounds rule ids and group names, in bytes.
	MaxIDLen = 64
	// MaxTextLen bounds a reason or a message, in bytes.
	MaxTextLen = 2000
	// DefaultTimeout is how long an ask rule holds a call when it names
	// no timeout.
	DefaultTimeout = 10 * time.Minute
	// MaxTimeout is the longest timeout and remember_for.
	MaxTimeout = 7 * 24 * time.Hour
	// GroupPrefix marks an approver that is a group: "group:oncall".
	GroupPrefix = "group:"
	// DefaultDenyReason is the reason of a call no rule matches under
	// `default: deny` when the file gives none.
	DefaultDenyReason = "no rule of the approval policy allows this tool call"
)

// The fields of the document, a group and a rule, in the order the errors
// list them.
var (
	docFields   = []string{"version", "default", "default_reason", "groups", "rules"}
	groupFields = []string{"members", "identity"}
	ruleFields  = []string{"id", "server", "tool", "client", "when", "action", "reason",
		"approvers", "approvals", "timeout", "on_timeout", "remember", "remember_for", "message"}
	// actionOnlyFields are the rule fields that only some actions take.
	actionOnlyFields = []string{"reason", "approvers", "approvals", "timeout", "on_timeout", "remember", "remember_for", "message"}
	// actionFields are the fields each action takes beyond the match
	// fields (id, server, tool, client, when, action).
	actionFields = map[Action][]string{
		Allow: nil,
		Deny:  {"reason"},
		Ask:   {"approvers", "approvals", "timeout", "on_timeout", "remember", "remember_for", "message"},
	}
)

// Parse reads a policy document, YAML or JSON, and validates all of it.
// It refuses the whole document on any problem and returns a *ParseError
// listing every problem found, each with its line, rule and field and what
// to do. Parse does no I/O and keeps nothing of data.
func Parse(data []byte) (pol *Policy, err error) {
	defer func() {
		// The YAML reader is third-party code fed a file an operator
		// wrote; a panic in it must not take the bridge down.
		if r := recover(); r != nil {
			pol, err = nil, docError(fmt.Sprintf("the YAML reader failed on this file (%v); check its syntax, or write it as JSON", r))
		}
	}()
	if len(data) > MaxPolicyBytes {
		return nil, docError(fmt.Sprintf("the file is %d bytes, over the %d a policy may have", len(data), MaxPolicyBytes))
	}
	root, err := readDoc(data)
	if err != nil {
		return nil, docError(err.Error())
	}
	sum := sha256.Sum256(data)
	p := &parser{revision: "sha256:" + hex.EncodeToString(sum[:])}
	pol = p.document(root)
	if len(p.problems) > 0 {
		// In the order of the file; problems of one line in the order found.
		slices.SortStableFunc(p.problems, func(a, b Problem) int { return a.Line - b.Line })
		e := &ParseError{Problems: p.problems}
		if len(e.Problems) > maxProblems {
			e.More = len(e.Problems) - maxProblems
			e.Problems = e.Problems[:maxProblems]
		}
		return nil, e
	}
	return pol, nil
}

func docError(msg string) *ParseError {
	return &ParseError{Problems: []Problem{{Msg: msg}}}
}

// readDoc reads the document's tree: JSON when it starts with '{' and is
// valid JSON, YAML otherwise.
func readDoc(data []byte) (*yaml.Node, error) {
	body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, errors.New("the file is empty; a policy needs at least `rules:` (write `rules: []` to allow every call)")
	}
	if trimmed[0] == '{' {
		root, jerr := jsonDoc(body)
		if jerr == nil {
			return root, nil
		}
		// A YAML flow mapping also starts with '{'.
		if root, yerr := yamlDoc(body); yerr == nil {
			return root, nil
		}
		return nil, jerr
	}
	return yamlDoc(body)
}

func yamlDoc(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file holds no YAML document; a policy needs at least `rules:`")
		}
		return nil, fmt.Errorf("the file is not valid YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, errors.New("the file holds more than one YAML document (a second ---); keep one policy in the file")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("the file holds no YAML document; a policy needs at least `rules:`")
	}
	return doc.Content[0], nil
}

// parser collects the problems of one document.
type parser struct {
	revision string
	problems []Problem
	groups   map[string]*groupDef
}

// groupDef is a group of approvers defined in the policy.
type groupDef struct {
	members  []string
	identity bool
}

// at is where a problem is: a rule (or none) and a field.
type at struct {
	rule  int
	id    string
	field string
}

func (a at) sub(field string) at {
	if a.field != "" {
		field = a.field + "." + field
	}
	a.field = field
	return a
}

func (p *parser) problem(n *yaml.Node, a at, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, Problem{Line: line, Rule: a.rule, RuleID: a.id, Field: a.field, Msg: fmt.Sprintf(format, args...)})
}

// document reads the whole document.
func (p *parser) document(root *yaml.Node) *Policy {
	vals, _, ok := p.fields(root, at{}, docFields, "the policy")
	if !ok {
		return nil
	}
	pol := &Policy{revision: p.revision, def: Decision{Action: Allow, Revision: p.revision}}
	if n := vals["version"]; n != nil {
		if v, ok := p.integer(n, at{field: "version"}); ok && v != 1 {
			p.problem(n, at{field: "version"}, "this bridge reads policy version 1; %d is newer or unknown", v)
		}
	}
	if n := vals["default"]; n != nil {
		if s, _ := p.oneOf(n, at{field: "default"}, "allow", "deny"); s == "deny" {
			pol.def = Decision{Action: Deny, Revision: p.revision, Reason: DefaultDenyReason}
		}
	}
	if n := vals["default_reason"]; n != nil {
		if s, ok := p.text(n, at{field: "default_reason"}); ok {
			if pol.def.Action != Deny {
				p.problem(n, at{field: "default_reason"}, "applies only with `default: deny`; remove it or set default: deny")
			}
			pol.def.Reason = s
		}
	}
	p.readGroups(vals["groups"])
	rules := vals["rules"]
	if rules == nil {
		p.problem(root, at{}, "the policy has no `rules:`; write the rules (or `rules: []` to allow every call)")
		return pol
	}
	if !p.plain(rules, at{field: "rules"}) {
		return pol
	}
	if rules.Kind != yaml.SequenceNode {
		if rules.Kind == yaml.ScalarNode && rules.Tag == "!!null" {
			p.problem(rules, at{field: "rules"}, "is empty; list the rules (or write `rules: []` to allow every call)")
		} else {
			p.problem(rules, at{field: "rules"}, "must be a list of rules, each starting with `- `")
		}
		return pol
	}
	if len(rules.Content) > MaxRules {
		p.problem(rules, at{field: "rules"}, "%d rules is more than the %d allowed", len(rules.Content), MaxRules)
		return pol
	}
	ids := map[string]int{}
	pol.rules = make([]rule, 0, len(rules.Content))
	for i, n := range rules.Content {
		r, ok := p.readRule(n, i+1, ids)
		if ok {
			pol.rules = append(pol.rules, r)
		}
	}
	return pol
}

func (p *parser) readGroups(n *yaml.Node) {
	p.groups = map[string]*groupDef{}
	if n == nil {
		return
	}
	a := at{field: "groups"}
	if !p.plain(n, a) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.problem(n, a, "must map each group's name to its members, like `oncall: [alice, bob]`")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		ga := a.sub(truncate(name, 64))
		if k.Kind != yaml.ScalarNode {
			p.problem(k, a, "a group's name must be a plain name")
			continue
		}
		if why := idProblem(name); why != "" {
			p.problem(k, ga, "the group name %s", why)
			continue
		}
		if p.groups[name] != nil {
			p.problem(k, ga, "the group is defined twice; keep one")
			continue
		}
		g := &groupDef{}
		var members *yaml.Node
		if v.Kind == yaml.MappingNode {
			vals, _, _ := p.fields(v, ga, groupFields, "a group")
			members = vals["members"]
			if idn := vals["identity"]; idn != nil {
				g.identity, _ = p.boolean(idn, ga.sub("identity"))
			}
			if members == nil && !g.identity {
				p.problem(v, ga, "the group has no members; list them under members, or set identity: true")
			}
		} else {
			members = v
		}
		if members != nil {
			ma := ga
			if v.Kind == yaml.MappingNode {
				ma = ga.sub("members")
			}
			if names, ok := p.strs(members, ma); ok {
				seen := map[string]bool{}
				for _, m := range names {
					if why := nameProblem(m); why != "" {
						p.problem(members, ma, "the member name %q %s", truncate(m, 64), why)
					} else if strings.HasPrefix(m, GroupPrefix) {
						p.problem(members, ma, "%q: a group cannot hold a group; list its members", truncate(m, 64))
					} else if !seen[m] {
						seen[m] = true
						g.members = append(g.members, m)
					}
				}
			}
		}
		p.groups[name] = g
	}
}

// readRule reads rule number idx (from 1).
func (p *parser) readRule(n *yaml.Node, idx int, ids map[string]int) (rule, bool) {
	a := at{rule: idx}
	before := len(p.problems)
	r := rule{index: idx}
	if !p.plain(n, a) {
		return r, false
	}
	if n.Kind != yaml.MappingNode {
		p.problem(n, a, "a rule must be a mapping of fields (%s)", strings.Join(ruleFields, ", "))
		return r, false
	}
	// The id first, so every later problem names it.
	id := fmt.Sprintf("#%d", idx)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "id" {
			continue
		}
		if s, ok := p.str(n.Content[i+1], a.sub("id")); ok {
			if why := idProblem(s); why != "" {
				p.problem(n.Content[i+1], a.sub("id"), "%q %s", truncate(s, 64), why)
			} else if first, dup := ids[s]; dup {
				a.id = s
				p.problem(n.Content[i+1], a.sub("id"), "rule %d has the same id; give each rule its own", first)
			} else {
				ids[s], id, a.id = idx, s, s
			}
		}
		break
	}
	vals, keys, ok := p.fields(n, a, ruleFields, "a rule")
	if !ok {
		return r, false
	}
	// What the rule decides.
	act := Action(0)
	if an := vals["action"]; an == nil {
		p.problem(n, a, "the rule has no action; write action: allow, deny or ask")
	} else if s, ok := p.oneOf(an, a.sub("action"), "allow", "deny", "ask"); ok {
		act = map[string]Action{"allow": Allow, "deny": Deny, "ask": Ask}[s]
	}
	if act != 0 {
		for _, f := range actionOnlyFields {
			if keys[f] != nil && !contains(actionFields[act], f) {
				p.problem(keys[f], a.sub(f), "applies only to %s rules, not to action: %s; remove it", ruleFieldOwner(f), act)
			}
		}
	}
	// What the rule matches.
	r.servers = p.globField(vals["server"], a.sub("server"))
	r.tools = p.globField(vals["tool"], a.sub("tool"))
	r.clients = p.globField(vals["client"], a.sub("client"))
	if wn := vals["when"]; wn != nil {
		if src, ok := p.str(wn, a.sub("when")); ok {
			if strings.TrimSpace(src) == "" {
				p.problem(wn, a.sub("when"), "is empty; write a condition, or leave the field out")
			} else if c, err := compileCondition(src); err != nil {
				p.problem(wn, a.sub("when"), "%v", err)
			} else {
				r.cond = c
			}
		}
	}
	r.decision = Decision{Action: act, Rule: id, Revision: p.revision}
	switch act {
	case Deny:
		if rn := vals["reason"]; rn == nil {
			p.problem(n, a, "a deny rule needs a reason, which the model reads; add reason: …")
		} else if s, ok := p.text(rn, a.sub("reason")); ok {
			r.decision.Reason = s
		}
	case Ask:
		r.decision.Ask = p.readAsk(n, vals, a)
	}
	if len(p.problems) > before {
		return r, false
	}
	r.decision.RuleHash = ruleHash(&r)
	return r, true
}

// ruleFieldOwner names the actions a field applies to.
func ruleFieldOwner(f string) string {
	if f == "reason" {
		return "deny"
	}
	return "ask"
}

func (p *parser) globField(n *yaml.Node, a at) globs {
	if n == nil {
		return nil
	}
	srcs, ok := p.strs(n, a)
	if !ok {
		return nil
	}
	gs := make(globs, 0, len(srcs))
	for _, s := range srcs {
		g, err := compileGlob(s)
		if err != nil {
			p.problem(n, a, "%q: %v", truncate(s, 64), err)
			continue
		}
		gs = append(gs, g)
	}
	return gs
}

// readAsk reads an ask rule's fields.
func (p *parser) readAsk(n *yaml.Node, vals map[string]*yaml.Node, a at) *Approval {
	ask := &Approval{Approvals: 1, Timeout: DefaultTimeout, OnTimeout: Deny,
		operators: map[string]struct{}{}, identityGroups: map[string]struct{}{}}
	an := vals["approvers"]
	before := len(p.problems)
	if an == nil {
		p.problem(n, a, "an ask rule needs approvers: operator names or group:NAME")
	} else if refs, ok := p.strs(an, a.sub("approvers")); ok {
		seen := map[string]bool{}
		for _, ref := range refs {
			if seen[ref] {
				p.problem(an, a.sub("approvers"), "%q is listed twice; keep one", truncate(ref, 64))
				continue
			}
			seen[ref] = true
			ask.Approvers = append(ask.Approvers, ref)
			if g, isGroup := strings.CutPrefix(ref, GroupPrefix); isGroup {
				def := p.groups[g]
				if def == nil {
					p.problem(an, a.sub("approvers"), "the group %q is not defined; define it under groups:, or fix the name", truncate(g, 64))
					continue
				}
				for _, m := range def.members {
					ask.operators[m] = struct{}{}
				}
				if def.identity {
					ask.identityGroups[g] = struct{}{}
				}
				continue
			}
			if why := nameProblem(ref); why != "" {
				p.problem(an, a.sub("approvers"), "the operator name %q %s", truncate(ref, 64), why)
				continue
			}
			ask.operators[ref] = struct{}{}
		}
	}
	if n := vals["approvals"]; n != nil {
		if v, ok := p.integer(n, a.sub("approvals")); ok {
			if v < 1 {
				p.problem(n, a.sub("approvals"), "must be 1 or more")
			} else {
				ask.Approvals = v
			}
		}
	}
	approversOK := an != nil && len(p.problems) == before
	if approversOK && len(ask.identityGroups) == 0 && ask.Approvals > len(ask.operators) && len(ask.operators) > 0 {
		where := vals["approvals"]
		if where == nil {
			where = an
		}
		p.problem(where, a.sub("approvals"), "%d distinct approvers must allow, but only %d could ever approve (%s); lower approvals or add approvers",
			ask.Approvals, len(ask.operators), truncate(strings.Join(sortedKeys(ask.operators), ", "), 200))
	}
	if approversOK && len(ask.identityGroups) == 0 && len(ask.operators) == 0 {
		p.problem(an, a.sub("approvers"), "no operator could ever approve: the groups listed have no members; add members or approvers")
	}
	if n := vals["timeout"]; n != nil {
		if d, ok := p.duration(n, a.sub("timeout")); ok {
			ask.Timeout = d
		}
	}
	if n := vals["on_timeout"]; n != nil {
		if s, _ := p.oneOf(n, a.sub("on_timeout"), "deny", "allow"); s == "allow" {
			ask.OnTimeout = Allow
		}
	}
	if n := vals["remember"]; n != nil {
		if s, _ := p.oneOf(n, a.sub("remember"), "session", "never"); s == "session" {
			ask.Remember = RememberSession
		}
	}
	if n := vals["remember_for"]; n != nil {
		if d, ok := p.duration(n, a.sub("remember_for")); ok {
			if ask.Remember != RememberSession {
				p.problem(n, a.sub("remember_for"), "applies only with remember: session; add it, or remove remember_for")
			}
			ask.RememberFor = d
		}
	}
	if n := vals["message"]; n != nil {
		ask.Message, _ = p.text(n, a.sub("message"))
	}
	return ask
}

// ruleHash hashes a rule's canonical form: everything that decides what
// it matches and what it decides, with groups resolved to their members,
// so a reload that leaves the rule's meaning unchanged leaves its hash.
func ruleHash(r *rule) string {
	type canonAsk struct {
		Operators      []string `json:"operators"`
		IdentityGroups []string `json:"identity_groups"`
		Approvals      int      `json:"approvals"`
		Timeout        int64    `json:"timeout_ns"`
		OnTimeout      string   `json:"on_timeout"`
		Remember       string   `json:"remember"`
		RememberFor    int64    `json:"remember_for_ns"`
		Message        string   `json:"message"`
	}
	c := struct {
		ID     string    `json:"id"`
		Server []string  `json:"server"`
		Tool   []string  `json:"tool"`
		Client []string  `json:"client"`
		When   *string   `json:"when"`
		Action string    `json:"action"`
		Reason string    `json:"reason"`
		Ask    *canonAsk `json:"ask"`
	}{ID: r.decision.Rule, Server: r.servers.Strings(), Tool: r.tools.Strings(), Client: r.clients.Strings(),
		Action: r.decision.Action.String(), Reason: r.decision.Reason}
	if r.cond != nil {
		c.When = &r.cond.src
	}
	if a := r.decision.Ask; a != nil {
		c.Ask = &canonAsk{Operators: sortedKeys(a.operators), IdentityGroups: sortedKeys(a.identityGroups),
			Approvals: a.Approvals, Timeout: int64(a.Timeout), OnTimeout: a.OnTimeout.String(),
			Remember: a.Remember.String(), RememberFor: int64(a.RememberFor), Message: a.Message}
	}
	// Strings, numbers and lists of strings always marshal.
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

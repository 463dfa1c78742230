package policy

import (
	"fmt"
	"slices"
	"time"
)

// Action is what a rule decides for a call.
type Action uint8

// The actions. The zero Action is not one: a Decision always has one of
// these.
const (
	// Allow passes the call to the server, as without a policy.
	Allow Action = iota + 1
	// Deny answers the call with an error result carrying the reason; the
	// server never sees it.
	Deny
	// Ask holds the call until its approvers decide (see Hold).
	Ask
)

// String returns the action's name as the policy file writes it.
func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// caution orders actions from the least to the most cautious.
func (a Action) caution() int {
	switch a {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2
}

// Remember says whether an approval may be remembered beyond its call.
type Remember uint8

const (
	// RememberNever: every call asks (the default).
	RememberNever Remember = iota
	// RememberSession: the approvers are offered allow-session, which lets
	// later calls of the same session with the same arguments under the
	// same rule pass (see Memory).
	RememberSession
)

// String returns the value as the policy file writes it.
func (r Remember) String() string {
	if r == RememberSession {
		return "session"
	}
	return "never"
}

// Call is a tool call as the policy sees it.
type Call struct {
	// Server is the MCP server's name, as the session shows it.
	Server string
	// Tool is the tools/call params.name.
	Tool string
	// Client is the client's authenticated name, or "" when the client
	// has none (a stdio client, or a gateway client without its own token).
	Client string
	// Arguments are the raw bytes of tools/call params.arguments; nil or
	// empty when the call has none (read as {}).
	Arguments []byte
}

// Decision is the policy's answer for one call. It is a value: a reload
// never changes a decision already made.
type Decision struct {
	// Action is Allow, Deny or Ask.
	Action Action
	// Rule is the id of the rule that decided, or "" when no rule matched
	// and the policy's default decided. A rule written without an id has
	// the id "#N", N its position from 1.
	Rule string
	// RuleHash is a hash of the deciding rule's canonical form, with its
	// groups resolved to their members; "" for the default. Two revisions
	// of a policy that leave a rule unchanged give it the same hash.
	RuleHash string
	// Revision is the revision of the policy that decided (Policy.Revision).
	Revision string
	// Reason is why the call is denied, for the model to read: the rule's
	// reason, or the default's. Empty unless Action is Deny.
	Reason string
	// Ask is how the call is approved when Action is Ask; nil otherwise.
	// It is shared with the policy and must not be changed.
	Ask *Approval
	// Fault is set when a condition could not be evaluated on this call
	// (its arguments lacked a key, had another type, were not a readable
	// object, or the condition ran out of cost). It names the rule and the
	// error, at most MaxFaultLen bytes; the error may name argument keys
	// and quote short argument values, so treat it as argument content
	// when gating what the bus sees. A fault only ever makes a decision
	// more cautious (see Policy.Decide).
	Fault string
}

// Approval says who decides a held call and how.
type Approval struct {
	// Approvers are the approvers as written: operator names and
	// "group:NAME" references.
	Approvers []string
	// Approvals is how many distinct approvers must allow (1 or more).
	Approvals int
	// Timeout is how long the call is held.
	Timeout time.Duration
	// OnTimeout is what happens when Timeout passes: Deny or Allow.
	OnTimeout Action
	// Remember says whether allow-session is offered.
	Remember Remember
	// RememberFor bounds how long an allow-session approval lasts; 0
	// means until the session ends.
	RememberFor time.Duration
	// Message is the rule's text for the approvers, or "".
	Message string

	// operators are the names that may approve: those written and the
	// members of the groups written.
	operators map[string]struct{}
	// identityGroups are the groups written whose members the identity
	// layer also vouches for (groups marked identity: true).
	identityGroups map[string]struct{}
}

// Actor is who acts on a held call: the operator's authenticated name and
// the groups its identity places it in (from a trusted identity source,
// never from the command).
type Actor struct {
	Name   string
	Groups []string
}

// IsApprover reports whether the actor may decide a call held under a.
// An actor is an approver when its name is written among the approvers or
// listed in a group written there, or when one of its identity groups is
// a group written there that is marked identity: true.
func (a *Approval) IsApprover(who Actor) bool {
	if who.Name == "" {
		return false
	}
	if _, ok := a.operators[who.Name]; ok {
		return true
	}
	for _, g := range who.Groups {
		if _, ok := a.identityGroups[g]; ok {
			return true
		}
	}
	return false
}

// Policy is a parsed, validated policy: ordered rules and a default. It is
// immutable and safe for concurrent use; a reload makes a new Policy.
type Policy struct {
	revision string
	rules    []rule
	// def is the decision when no rule matches.
	def Decision
}

// rule is one compiled rule.
type rule struct {
	// index is the rule's position, from 1.
	index                   int
	servers, tools, clients globs
	cond                    *condition
	// decision is what the rule decides when it matches, with no Fault.
	decision Decision
}

// Revision is the policy's revision: "sha256:" and the hex SHA-256 of the
// file's bytes exactly as loaded, so `sha256sum FILE` names the file that
// was in force. Each Decision carries it.
func (p *Policy) Revision() string { return p.revision }

// Len is the number of rules.
func (p *Policy) Len() int { return len(p.rules) }

// Default is what the policy decides for a call no rule matches: Allow
// unless the file says `default: deny`.
func (p *Policy) Default() Action { return p.def.Action }

// RuleIDs lists the rules' ids in order.
func (p *Policy) RuleIDs() []string {
	ids := make([]string, len(p.rules))
	for i := range p.rules {
		ids[i] = p.rules[i].decision.Rule
	}
	return ids
}

// Decide returns the decision for a call: the first rule whose server,
// tool and client patterns match and whose condition (if any) is true
// decides; when none does, the default decides.
//
// A condition that cannot be evaluated on the call (a missing key, a value
// of another type, unreadable arguments, the cost bound) never makes a
// decision less cautious than either answer it could have given. With
// deny the most cautious, then ask, then allow:
//   - a deny rule whose condition fails denies;
//   - an allow rule whose condition fails does not apply (the rules after
//     it decide);
//   - an ask rule whose condition fails asks, unless the rules after it
//     deny, in which case the call is denied.
//
// The decision's Fault then names the first such rule and its error.
//
// Decide does no I/O; it reads the call's arguments only when a condition
// needs them, at most once.
func (p *Policy) Decide(c Call) Decision {
	var vars *callVars
	// pending is the first ask rule whose condition failed.
	var pending *rule
	var fault string
	for i := range p.rules {
		r := &p.rules[i]
		// The tool first: it tells rules apart most often.
		if !r.tools.Match(c.Tool) || !r.servers.Match(c.Server) || !r.clients.Match(c.Client) {
			continue
		}
		if r.cond != nil {
			if vars == nil {
				vars = &callVars{call: c}
			}
			ok, err := r.cond.eval(vars)
			if err != nil {
				if fault == "" {
					fault = faultText(r, err)
				}
				switch r.decision.Action {
				case Deny:
					return r.withFault(fault)
				case Ask:
					if pending == nil {
						pending = r
					}
				}
				continue
			}
			if !ok {
				continue
			}
		}
		return p.settle(r.decision, pending, fault)
	}
	return p.settle(p.def, pending, fault)
}

// settle is the decision when d would decide but an earlier ask rule's
// condition failed: the more cautious of that ask and d, the earlier rule
// when both ask.
func (p *Policy) settle(d Decision, pending *rule, fault string) Decision {
	if pending != nil && d.Action.caution() <= Ask.caution() {
		d = pending.decision
	}
	d.Fault = fault
	return d
}

func (r *rule) withFault(fault string) Decision {
	d := r.decision
	d.Fault = fault
	return d
}

func faultText(r *rule, err error) string {
	return truncate(fmt.Sprintf("rule %s: the condition could not be evaluated: %v", r.decision.Rule, err), MaxFaultLen)
}

// sortedKeys returns a set's members in order.
func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

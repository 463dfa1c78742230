package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Verdict is an operator's answer to a held call: one of the options of
// its permission question.
type Verdict uint8

// The verdicts.
const (
	VerdictAllow Verdict = iota + 1
	// VerdictAllowSession allows the call and, once the rule's approvals
	// all say so, later identical calls of the session (see Memory).
	// Offered only by rules with remember: session.
	VerdictAllowSession
	VerdictDeny
)

// String returns the verdict's option id: "allow", "allow-session" or
// "deny".
func (v Verdict) String() string {
	switch v {
	case VerdictAllow:
		return "allow"
	case VerdictAllowSession:
		return "allow-session"
	case VerdictDeny:
		return "deny"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// ParseVerdict reads an option id ("allow", "allow-session", "deny").
func ParseVerdict(option string) (Verdict, bool) {
	for _, v := range []Verdict{VerdictAllow, VerdictAllowSession, VerdictDeny} {
		if option == v.String() {
			return v, true
		}
	}
	return 0, false
}

// Offers lists the options a held call's question offers, in order:
// allow, allow-session when the rule remembers, and deny.
func (a *Approval) Offers() []Verdict {
	if a.Remember == RememberSession {
		return []Verdict{VerdictAllow, VerdictAllowSession, VerdictDeny}
	}
	return []Verdict{VerdictAllow, VerdictDeny}
}

// Vote is one operator's action on a held call.
type Vote struct {
	// Actor is the authenticated operator, as the identity layer says:
	// never a name taken from the command itself.
	Actor   Actor
	Verdict Verdict
	// Reason is the operator's reason for a deny, for the model to read;
	// optional.
	Reason string
}

// State is where a held call is.
type State uint8

// The states of a held call. Every state but Pending is final.
const (
	// Pending: waiting for approvals.
	Pending State = iota
	// Allowed: enough approvers allowed, or the timeout passed under
	// on_timeout: allow. Outcome.Grant is set.
	Allowed
	// Denied: an approver denied, or the timeout passed under
	// on_timeout: deny.
	Denied
	// Withdrawn: the client cancelled the call, or the session ended,
	// before a decision.
	Withdrawn
)

// String names the state.
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Allowed:
		return "allowed"
	case Denied:
		return "denied"
	case Withdrawn:
		return "withdrawn"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Outcome is a held call's state and how it got there.
type Outcome struct {
	State State
	// Approved are the distinct approvers who allowed, in order.
	Approved []string
	// Needed is how many must allow (the rule's approvals).
	Needed int
	// DeniedBy is the approver who denied; "" when the call was denied
	// by its timeout.
	DeniedBy string
	// Reason is the denying approver's reason, or, on a timeout, a
	// sentence saying so.
	Reason string
	// TimedOut is true when the timeout decided.
	TimedOut bool
	// Grant is the approval, when State is Allowed.
	Grant *Grant
}

// Scope is what an approval covers.
type Scope uint8

const (
	// ScopeCall covers the one held call.
	ScopeCall Scope = iota + 1
	// ScopeSession also covers later calls of the session with the same
	// arguments under the same rule, until the grant expires.
	ScopeSession
)

// String names the scope.
func (s Scope) String() string {
	if s == ScopeSession {
		return "session"
	}
	return "call"
}

// CallGrantWindow is how long a ScopeCall grant covers its call after the
// approval. The bridge releases a held call as soon as it is allowed; the
// window only bounds a grant kept by mistake.
const CallGrantWindow = time.Minute

// Grant is an approval, bound to the exact call: the session, the rule
// (id and hash), the policy revision it was raised under, the arguments'
// digest, and an expiry.
type Grant struct {
	Session  string
	Rule     string
	RuleHash string
	Revision string
	Digest   string
	Scope    Scope
	// By are the approvers who allowed, in order; empty when the timeout
	// allowed (on_timeout: allow).
	By []string
	// Granted is when the last needed approval came.
	Granted time.Time
	// Expires is when the grant stops covering calls. For ScopeCall it is
	// Granted plus CallGrantWindow; for ScopeSession it is Granted plus the
	// rule's remember_for, or zero for the rest of the session.
	Expires time.Time
}

// Covers reports whether the grant lets a call pass without asking: d is
// the policy's Ask decision for the call (so the grant's rule, unchanged,
// still decides it), in the same session, with the same arguments, before
// the grant expires. A ScopeCall grant also needs the same policy
// revision; a ScopeSession grant outlives reloads that leave its rule
// unchanged (same RuleHash).
func (g *Grant) Covers(d Decision, session, digest string, now time.Time) bool {
	if g == nil || d.Action != Ask || d.Rule != g.Rule || d.RuleHash != g.RuleHash ||
		session != g.Session || digest != g.Digest {
		return false
	}
	if g.Scope != ScopeSession && d.Revision != g.Revision {
		return false
	}
	return g.Expires.IsZero() || now.Before(g.Expires)
}

// RefusalKind is why a vote was refused.
type RefusalKind uint8

const (
	// NotApprover: the operator is not an approver of the rule.
	NotApprover RefusalKind = iota + 1
	// AlreadyApproved: the operator has already allowed this call; a
	// second approval by the same operator does not count.
	AlreadyApproved
	// NotOffered: the verdict is not one of the question's options
	// (allow-session on a rule without remember: session, or none).
	NotOffered
	// Settled: the call is no longer pending (decided, timed out or
	// withdrawn).
	Settled
)

// Refusal is a vote the hold did not take. The hold is unchanged by it
// (except that a vote at or after the deadline first settles the timeout).
type Refusal struct {
	Kind RefusalKind
	// Detail says what happened and what to do, naming the operator and
	// the rule; it never quotes the call's arguments.
	Detail string
}

func (r *Refusal) Error() string { return r.Detail }

// NackReason is the control.rejected reason (AEP-0004 §3) for the
// refusal: "unauthorized" for an operator who is not an approver,
// "refused" for a repeated approval, "invalid" otherwise.
func (r *Refusal) NackReason() string {
	switch r.Kind {
	case NotApprover:
		return aep.ReasonUnauthorized
	case AlreadyApproved:
		return aep.ReasonRefused
	}
	return aep.ReasonInvalid
}

// Hold is the approval state machine of one held call. It is pure: the
// caller owns the timer and passes the time in, so tests drive it with
// any clock. A Hold is not safe for concurrent use: its owner serializes
// Vote, Expire and Withdraw.
type Hold struct {
	d        Decision
	session  string
	digest   string
	deadline time.Time
	// wantSession holds, for each of out.Approved, whether it chose
	// allow-session.
	wantSession []bool
	out         Outcome
}

// NewHold holds a call that d (an Ask decision) asks about, in session,
// with the arguments' digest (ArgsDigest), from now until now plus the
// rule's timeout. The hold keeps d: a reload does not change the rule or
// revision a held call was raised under.
func NewHold(d Decision, session, digest string, now time.Time) (*Hold, error) {
	if d.Action != Ask || d.Ask == nil {
		return nil, fmt.Errorf("holding a call: the decision is %s, not ask; only an ask decision holds a call", d.Action)
	}
	if digest == "" {
		return nil, errors.New("holding a call: no arguments digest; pass ArgsDigest of the call's arguments")
	}
	return &Hold{d: d, session: session, digest: digest, deadline: now.Add(d.Ask.Timeout),
		out: Outcome{State: Pending, Needed: d.Ask.Approvals}}, nil
}

// Decision is the decision the call is held under.
func (h *Hold) Decision() Decision { return h.d }

// Deadline is when the hold times out.
func (h *Hold) Deadline() time.Time { return h.deadline }

// Outcome returns the hold's state and progress ("1 of 2" is
// len(Approved) of Needed).
func (h *Hold) Outcome() Outcome {
	o := h.out
	o.Approved = slices.Clone(h.out.Approved)
	return o
}

// Vote takes one operator's verdict at time now and returns the outcome
// after it. A vote is refused with a *Refusal when the operator is not an
// approver, has already allowed, chose an option the question does not
// offer, or when the call is no longer pending. A vote at or after the
// deadline first settles the timeout, then is refused as Settled.
//
// A deny from any approver denies at once, even from one who allowed
// before. An allow counts once per operator name; the call is allowed when
// Needed distinct approvers have allowed. The grant's scope is session
// only when every counted approval chose allow-session.
func (h *Hold) Vote(v Vote, now time.Time) (Outcome, error) {
	if h.out.State == Pending && !now.Before(h.deadline) {
		h.Expire(now)
	}
	if h.out.State != Pending {
		return h.Outcome(), &Refusal{Kind: Settled, Detail: fmt.Sprintf("the call held under rule %q is already %s; nothing to decide", h.d.Rule, h.out.State)}
	}
	ask := h.d.Ask
	if !ask.IsApprover(v.Actor) {
		return h.Outcome(), &Refusal{Kind: NotApprover, Detail: fmt.Sprintf("operator %q is not an approver of rule %q (approvers: %s); ask one of them",
			truncate(v.Actor.Name, MaxNameLen), h.d.Rule, truncate(strings.Join(ask.Approvers, ", "), 200))}
	}
	switch v.Verdict {
	case VerdictDeny:
		h.out.State, h.out.DeniedBy, h.out.Reason = Denied, v.Actor.Name, v.Reason
		return h.Outcome(), nil
	case VerdictAllow:
	case VerdictAllowSession:
		if ask.Remember != RememberSession {
			return h.Outcome(), &Refusal{Kind: NotOffered, Detail: fmt.Sprintf("rule %q does not offer allow-session (it has no remember: session); choose allow or deny", h.d.Rule)}
		}
	default:
		return h.Outcome(), &Refusal{Kind: NotOffered, Detail: "the verdict is not one the question offers; choose allow or deny"}
	}
	if slices.Contains(h.out.Approved, v.Actor.Name) {
		return h.Outcome(), &Refusal{Kind: AlreadyApproved, Detail: fmt.Sprintf("operator %q has already approved this call; %d of %d approvals, another approver must allow",
			truncate(v.Actor.Name, MaxNameLen), len(h.out.Approved), ask.Approvals)}
	}
	h.out.Approved = append(h.out.Approved, v.Actor.Name)
	h.wantSession = append(h.wantSession, v.Verdict == VerdictAllowSession)
	if len(h.out.Approved) >= ask.Approvals {
		scope := ScopeSession
		for _, s := range h.wantSession {
			if !s {
				scope = ScopeCall
			}
		}
		h.allow(now, scope, slices.Clone(h.out.Approved))
	}
	return h.Outcome(), nil
}

// Expire settles the hold by its timeout when now is at or after the
// deadline and the call is still pending: on_timeout deny denies it,
// allow allows it for this call alone. It reports whether it settled the
// hold.
func (h *Hold) Expire(now time.Time) bool {
	if h.out.State != Pending || now.Before(h.deadline) {
		return false
	}
	h.out.TimedOut = true
	if h.d.Ask.OnTimeout == Allow {
		h.allow(now, ScopeCall, nil)
		return true
	}
	h.out.State = Denied
	h.out.Reason = fmt.Sprintf("no decision within %s (%d of %d approvals); the call was denied", h.d.Ask.Timeout, len(h.out.Approved), h.d.Ask.Approvals)
	return true
}

// Withdraw ends a pending hold without a decision: the client cancelled
// the call or the session ended. It reports whether the hold was pending.
func (h *Hold) Withdraw() bool {
	if h.out.State != Pending {
		return false
	}
	h.out.State = Withdrawn
	return true
}

func (h *Hold) allow(now time.Time, scope Scope, by []string) {
	g := &Grant{Session: h.session, Rule: h.d.Rule, RuleHash: h.d.RuleHash, Revision: h.d.Revision,
		Digest: h.digest, Scope: scope, By: by, Granted: now, Expires: now.Add(CallGrantWindow)}
	if scope == ScopeSession {
		g.Expires = time.Time{}
		if h.d.Ask.RememberFor > 0 {
			g.Expires = now.Add(h.d.Ask.RememberFor)
		}
	}
	h.out.State, h.out.Grant = Allowed, g
}

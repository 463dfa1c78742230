package attention

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// A permission request is a tool call held for approval under the
// approval policy (AEP-0002 §5.3, kind "permission"): its options are the
// verdicts the rule offers (allow, allow-session, deny), it is answered
// over control only, and its votes are counted by the call's policy.Hold,
// which the manager owns once the request is raised and drives under its
// lock. A vote that does not settle the call (the first of two approvals)
// is recorded as TypeVote; the vote that settles it is the request's
// attention.answered, followed by attention.resolved.

// TypeVote is the event type of an approval that counted but did not yet
// settle a permission request ("1 of 2"). It is a vendor type, not an
// attention.answered: AEP-0002 §5.3 makes attention.answered the statement
// of what was applied, and nothing is applied until enough approvers
// allow.
const TypeVote = bus.TypeQuestionVote

// Vote is the data of TypeVote.
type Vote struct {
	// By is the approver, as the endpoint authenticated it; Option the
	// verdict (allow or allow-session).
	By     string `json:"by"`
	Option string `json:"option"`
	// Approved are the distinct approvers so far, in order; Needed how
	// many the rule needs.
	Approved []string `json:"approved"`
	Needed   int      `json:"needed"`
}

// The extension attributes (AEP-0001 §5.4) of a permission request's
// attention.requested. Each is structural (names, ids, a count, a
// digest), so each is present at every capture level.
const (
	// ExtTool is the tool's name (tools/call params.name).
	ExtTool = "aepmcpbridgetool"
	// ExtClient is the MCP client's authenticated name, when it has one.
	ExtClient = "aepmcpbridgeclient"
	// ExtRule is the id of the policy rule that asked.
	ExtRule = "aepmcpbridgerule"
	// ExtRevision is the policy's revision (sha256 of its file).
	ExtRevision = "aepmcpbridgerev"
	// ExtApprovals is how many distinct approvers must allow.
	ExtApprovals = "aepmcpbridgeneed"
	// ExtDigest is the arguments' digest (policy.ArgsDigest).
	ExtDigest = "aepmcpbridgedigest"
)

// MaxPromptArgs bounds the arguments a permission request's prompt
// quotes, in bytes; longer arguments are cut with an ellipsis.
const MaxPromptArgs = 2000

// Permission makes a Spec a permission request.
type Permission struct {
	// Hold is the call's approval state, made by policy.NewHold from the
	// Ask decision. Raise takes it over: nobody else may touch it after.
	Hold *policy.Hold
	// Tool is the tool's name; Client the client's authenticated name or
	// "".
	Tool, Client string
	// Arguments are the call's raw arguments (a JSON object, or empty).
	// The prompt quotes them as the ceiling allows; the server always
	// gets them unchanged.
	Arguments json.RawMessage
	// Digest is policy.ArgsDigest of Arguments.
	Digest string
	// Cause is the id of the call's tool.requested event, or "".
	Cause string
}

// permissionLabels are the options' labels at redacted and above.
var permissionLabels = map[policy.Verdict]string{
	policy.VerdictAllow:        "Allow",
	policy.VerdictAllowSession: "Allow for this session",
	policy.VerdictDeny:         "Deny",
}

// permissionRequest builds a permission request's attention.requested
// draft at the manager's ceiling, and says how long it is held.
func (m *Manager) permissionRequest(s Spec, now time.Time) (aep.Draft, time.Duration) {
	pm := s.Permission
	d := pm.Hold.Decision()
	wait := pm.Hold.Deadline().Sub(now)
	if wait < 0 {
		wait = 0
	}
	req := &aep.AttentionRequested{Kind: "permission", ExpiresAt: aep.FormatTime(pm.Hold.Deadline()), RespondVia: []string{"control"}}
	for i, v := range d.Ask.Offers() {
		label := permissionLabels[v]
		if m.ceiling < aep.CaptureRedacted {
			label = fmt.Sprint(i + 1) // AEP-0002 §5.3: a structural placeholder at metadata
		}
		req.Options = append(req.Options, aep.Choice{ID: v.String(), Label: label})
	}
	switch {
	case m.ceiling >= aep.CaptureRedacted:
		req.Prompt = m.permissionPrompt(s, d)
		if m.ceiling >= aep.CaptureFull {
			req.Context = permissionContext(s)
		}
	default:
		req.Prompt = aep.SynthesizePrompt(m.agent, "permission", s.Subject)
	}
	ext := map[string]any{ExtTool: pm.Tool, ExtRule: d.Rule, ExtRevision: d.Revision, ExtApprovals: d.Ask.Approvals, ExtDigest: pm.Digest}
	if pm.Client != "" {
		ext[ExtClient] = pm.Client
	}
	var data any
	if m.ceiling > aep.CaptureNone {
		data = req
	}
	return aep.Draft{Type: "attention.requested", Subject: s.Subject, Cause: pm.Cause, Severity: aep.SeverityNotice,
		Capture: m.ceiling, Extensions: ext, Data: data}, wait
}

// permissionPrompt is what the approvers read at redacted and above: the
// tool, the server, the rule's message, and the arguments through the
// §9.4 pipeline (below full), cut at MaxPromptArgs.
func (m *Manager) permissionPrompt(s Spec, d policy.Decision) string {
	pm := s.Permission
	var b strings.Builder
	fmt.Fprintf(&b, "Permission requested: %s on %s", pm.Tool, s.Subject)
	if pm.Client != "" {
		fmt.Fprintf(&b, " for %s", pm.Client)
	}
	if args := m.promptArgs(pm.Arguments); args != "" {
		b.WriteString(" — ")
		b.WriteString(args)
	}
	if d.Ask.Message != "" {
		msg := d.Ask.Message
		if m.ceiling < aep.CaptureFull {
			msg = m.red.Text(msg)
		}
		b.WriteString("\n")
		b.WriteString(msg)
	}
	return b.String()
}

// promptArgs renders the arguments for the prompt: compact JSON, each
// string through the redaction pipeline below full, cut at MaxPromptArgs.
// Arguments that are not a JSON object are not quoted.
func (m *Manager) promptArgs(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil || len(v) == 0 {
		return ""
	}
	var out any = v
	if m.ceiling < aep.CaptureFull {
		out = m.red.Value(v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	if len(b) > MaxPromptArgs {
		cut := MaxPromptArgs
		for cut > 0 && b[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

// permissionContext is the request's context at full capture: the tool
// call as the server will get it.
func permissionContext(s Spec) json.RawMessage {
	c := map[string]any{"tool": s.Permission.Tool, "server": s.Subject}
	if s.Permission.Client != "" {
		c["client"] = s.Permission.Client
	}
	if len(bytes.TrimSpace(s.Permission.Arguments)) > 0 && json.Valid(s.Permission.Arguments) {
		c["arguments"] = s.Permission.Arguments
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	return b
}

// permissionVerdict reads an operator's answer to a permission request
// as a verdict and the reason it gives. The option is the lossless
// channel; text alone that names an option (its id or label, trimmed, any
// case) is that option (AEP-0008); any other text alone denies, with the
// text as the reason, as AEP-0002 §5.3 asks of a permission request (text
// never allows).
func permissionVerdict(offers []policy.Verdict, a aep.Answer) (policy.Verdict, string, error) {
	if a.Values != nil {
		return 0, "", fmt.Errorf("a permission request takes option %s, not values", offerList(offers))
	}
	if a.Option == "" {
		t := strings.ToLower(strings.TrimSpace(a.Text))
		if t == "" {
			return 0, "", fmt.Errorf("the answer has no option; choose %s", offerList(offers))
		}
		for _, v := range offers {
			if t == v.String() || t == strings.ToLower(permissionLabels[v]) {
				return v, "", nil
			}
		}
		return policy.VerdictDeny, a.Text, nil
	}
	v, ok := policy.ParseVerdict(a.Option)
	if !ok {
		return 0, "", fmt.Errorf("option %q is not one this permission request offers; choose %s", truncateName(a.Option), offerList(offers))
	}
	reason := ""
	if v == policy.VerdictDeny {
		reason = a.Text
	}
	return v, reason, nil
}

func offerList(offers []policy.Verdict) string {
	names := make([]string, len(offers))
	for i, v := range offers {
		names[i] = strconv.Quote(v.String())
	}
	return strings.Join(names, ", ")
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// respondPermission decides an operator's vote on permission request q;
// m.mu is held and is released before it returns. who is the operator as
// the endpoint authenticated it: its name and its identity groups.
func (m *Manager) respondPermission(q *question, cmd aep.Event, a aep.Answer, who policy.Actor, ack func(reason, detail string) error) {
	by := who.Name
	h := q.spec.Permission.Hold
	offers := h.Decision().Ask.Offers()
	v, reason, err := permissionVerdict(offers, a)
	if err != nil {
		m.mu.Unlock()
		ack(aep.ReasonInvalid, err.Error())
		return
	}
	out, err := h.Vote(policy.Vote{Actor: who, Verdict: v, Reason: reason}, time.Now())
	if err != nil {
		if out.State != policy.Pending && out.TimedOut {
			// The vote came at the deadline: the hold settled by its
			// timeout first. Settle the question the same way.
			m.mu.Unlock()
			ack(aep.ReasonRefused, err.Error())
			m.expire(q.id)
			return
		}
		m.mu.Unlock()
		if rf, ok := err.(*policy.Refusal); ok {
			ack(rf.NackReason(), rf.Detail)
			return
		}
		ack(aep.ReasonInvalid, err.Error())
		return
	}
	if err := ack("", ""); err != nil {
		m.log.Warn("emitting control.accepted", "cmd", cmd.ID, "err", err)
	}
	applied := aep.Answer{Option: v.String()}
	if v == policy.VerdictDeny && reason != "" {
		applied.Text = reason // the emitter keeps it only at redacted and above
	}
	if out.State == policy.Pending {
		if _, _, err := m.pub.Emit(aep.Draft{Type: TypeVote, Subject: q.id, Cause: cmd.ID, Capture: aep.CaptureMetadata,
			Data: Vote{By: by, Option: v.String(), Approved: out.Approved, Needed: out.Needed}}); err != nil {
			m.log.Warn("emitting "+TypeVote, "id", q.id, "err", err)
		}
		m.mu.Unlock()
		return
	}
	m.resolveLocked(q, applied, "control", by, cmd.ID)
	m.mu.Unlock()
	q.spec.Deliver(Resolution{Outcome: Answered, Permission: out})
}

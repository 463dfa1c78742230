package attention

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
	"github.com/agenteventprotocol/aep-mcp-bridge/script"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// Publisher stamps and publishes events of the session. The bus emitter
// implements it.
type Publisher interface {
	Emit(d aep.Draft) (aep.Event, []byte, error)
}

// DefaultTimeout is how long a question waits when no timeout is set.
const DefaultTimeout = 10 * time.Minute

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Agent is the bridge's agent name, for synthesized prompts.
	Agent string
	// Publisher receives every lifecycle event. Required.
	Publisher Publisher
	// Timeout is how long a question waits for an answer. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Ceiling is the capture ceiling of attention.* events. Zero means
	// redacted.
	Ceiling aep.Capture
	// Redactor is the redaction pipeline. Nil means the default pipeline.
	Redactor *aep.Redactor
	// Logger receives operational logs; nil discards them. Answer content
	// is never logged.
	Logger *slog.Logger
	// Policy answers questions from scripted rules; nil means none.
	Policy Policy
	// PolicyOnly cancels every question no rule answers (--answers-only).
	PolicyOnly bool
	// MaxOpen bounds the questions open at once in the session; 0 means
	// DefaultMaxOpen. Raise refuses one more with a *LimitError.
	MaxOpen int
	// MaxOpenBytes bounds the bytes of the attention.requested events of
	// the questions open at once; 0 means DefaultMaxOpenBytes. Raise
	// refuses a question that would pass it with a *LimitError. It is
	// kept exactly when the Publisher is a BoundedPublisher (the bus
	// emitter is).
	MaxOpenBytes int64
}

// Policy decides scripted answers. *script.Rules implements it.
type Policy interface {
	Answer(server string, form *translate.Form) (script.Decision, bool, error)
}

// Outcome says how a question ended.
type Outcome int

// Question outcomes.
const (
	// Answered: an operator's answer was accepted; Decision holds it.
	Answered Outcome = iota + 1
	// TimedOut: nobody answered in time; the server gets cancel.
	TimedOut
	// Dismissed: the question was withdrawn (the server cancelled it, the
	// client answered it, or the session ended); nothing is returned.
	Dismissed
)

// Resolution is delivered once per question.
type Resolution struct {
	Outcome  Outcome
	Decision translate.Decision
	// Permission is the held call's outcome, for a permission request
	// (Spec.Permission) that was answered or timed out.
	Permission policy.Outcome
}

// Spec describes a question to raise.
type Spec struct {
	// Form is the parsed elicitation. Nil raises an informational request
	// (kind "input") for a question only the client can answer.
	Form *translate.Form
	// Message is the server's message, used when Form is nil.
	Message string
	// Subject is the asking server's display name.
	Subject string
	// RespondVia lists the answer channels: "control" (operators), "oob"
	// (the MCP client).
	RespondVia []string
	// Deliver receives the resolution exactly once, outside the manager's
	// lock. It must not block for long.
	Deliver func(Resolution)
	// URL, with ElicitationID, makes this a URL-mode question (MCP
	// 2025-11-25): the operator consents to open URL themselves, declines
	// or cancels; the bridge never fetches it.
	URL           string
	ElicitationID string
	// Permission, when set, makes this a permission request: a tool call
	// held for approval (permission.go). Form, Message and URL are then
	// unused, and the request waits until its hold's deadline.
	Permission *Permission
}

// urlOptions are the answers to a URL-mode question.
var urlOptions = []aep.Choice{
	{ID: "accept", Label: "I will open the link and complete it"},
	{ID: "decline", Label: "Decline"},
	{ID: "cancel", Label: "Cancel"},
}

// Info describes a pending question.
type Info struct {
	ID         string
	Subject    string
	Raised     time.Time
	Expires    time.Time
	RespondVia []string
}

type question struct {
	id      string
	spec    Spec
	fields  []aep.FieldSpec // as published, for gating answers
	raised  time.Time
	expires time.Time
	size    int64 // of its attention.requested event
	timer   *time.Timer
	// script is the pending scripted answer's timer, if any.
	script *time.Timer
}

// stop stops the question's timers.
func (q *question) stop() {
	q.timer.Stop()
	if q.script != nil {
		q.script.Stop()
	}
}

// Manager owns a session's pending questions and their lifecycle events
// (AEP-0002 §7): attention.requested, then either control.accepted →
// attention.answered → attention.resolved, or attention.timeout, or
// attention.resolved{dismissed}. Every question gets exactly one terminal.
//
// A Manager is safe for concurrent use. Its timers are stopped by Close.
type Manager struct {
	agent   string
	pub     Publisher
	timeout time.Duration
	ceiling aep.Capture
	red     *aep.Redactor
	log     *slog.Logger
	policy  Policy
	only    bool
	// maxOpen and maxOpenBytes bound the pending questions.
	maxOpen      int
	maxOpenBytes int64

	// mu guards pending and closed, and orders each question's events.
	mu      sync.Mutex
	pending map[string]*question
	closed  bool
	// settled remembers the last maxSettled questions settled, in
	// settledOrder, so a late answer is recorded as one that lost.
	settled      map[string]settled
	settledOrder []string
}

// NewManager returns a Manager.
func NewManager(o ManagerOptions) *Manager {
	m := &Manager{agent: o.Agent, pub: o.Publisher, timeout: o.Timeout, ceiling: o.Ceiling, red: o.Redactor, log: o.Logger,
		policy: o.Policy, only: o.PolicyOnly, pending: map[string]*question{}, maxOpen: o.MaxOpen, maxOpenBytes: o.MaxOpenBytes}
	if m.maxOpen <= 0 {
		m.maxOpen = DefaultMaxOpen
	}
	if m.maxOpenBytes <= 0 {
		m.maxOpenBytes = DefaultMaxOpenBytes
	}
	if m.timeout <= 0 {
		m.timeout = DefaultTimeout
	}
	if m.ceiling == 0 {
		m.ceiling = aep.CaptureRedacted
	}
	if m.red == nil {
		m.red = defaultRedactor
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m
}

// Timeout returns how long questions wait.
func (m *Manager) Timeout() time.Duration { return m.timeout }

// ErrClosed is returned by Raise after Close.
var ErrClosed = fmt.Errorf("the session is ending; no new questions are accepted")

// Raise publishes attention.requested for s and starts its timer. It
// returns the request's id, which operators answer as the command subject.
// A question over a limit (its event's size, or the session's open
// questions in count or bytes) is refused with a *LimitError, and nothing
// is published.
func (m *Manager) Raise(s Spec) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", ErrClosed
	}
	if len(m.pending) >= m.maxOpen {
		return "", &LimitError{Limit: LimitOpen, Max: int64(m.maxOpen)}
	}
	now := time.Now()
	q := &question{spec: s, raised: now, expires: now.Add(m.timeout)}
	var (
		data    any
		capture aep.Capture
		ext     map[string]any
	)
	var draft *aep.Draft
	wait := m.timeout
	if s.Permission != nil {
		d, w := m.permissionRequest(s, now)
		draft, wait = &d, w
		q.expires = s.Permission.Hold.Deadline()
	} else if s.URL != "" {
		d := &aep.AttentionRequested{Kind: "auth", ExpiresAt: aep.FormatTime(q.expires), RespondVia: s.RespondVia,
			Options: append([]aep.Choice(nil), urlOptions...)}
		capture = m.ceiling
		text := s.Message + "\nURL: " + s.URL
		switch {
		case capture >= aep.CaptureFull:
			d.Prompt = text
		case capture == aep.CaptureRedacted:
			d.Prompt = m.red.Text(text)
		default:
			d.Prompt = aep.SynthesizePrompt(m.agent, "auth", s.Subject)
			for i := range d.Options {
				d.Options[i].Label = d.Options[i].ID
			}
		}
		if capture > aep.CaptureNone {
			data = d
		}
	} else if s.Form != nil {
		d, c := FormRequest(s.Form, RequestOptions{Agent: m.agent, Ceiling: m.ceiling, Redactor: m.red,
			ExpiresAt: aep.FormatTime(q.expires), RespondVia: s.RespondVia})
		if d != nil {
			data = d
		}
		q.fields = s.Form.FieldSpecs() // gating needs the structure, not the gated labels
		capture = c
		if v := aep.IntegerFieldsValue(q.fields); v != "" {
			ext = map[string]any{aep.ExtIntegerFields: v}
		}
	} else {
		d := &aep.AttentionRequested{Kind: "input", ExpiresAt: aep.FormatTime(q.expires), RespondVia: s.RespondVia}
		capture = m.ceiling
		switch {
		case capture >= aep.CaptureFull:
			d.Prompt = s.Message
		case capture == aep.CaptureRedacted:
			d.Prompt = m.red.Text(s.Message)
		default:
			d.Prompt = aep.SynthesizePrompt(m.agent, "input", s.Subject)
		}
		if capture > aep.CaptureNone {
			data = d
		}
	}
	if draft == nil {
		draft = &aep.Draft{Type: "attention.requested", Subject: s.Subject, Severity: aep.SeverityNotice, Capture: capture,
			Extensions: ext, Data: data}
	}
	ev, raw, err := m.publishRequest(*draft)
	if err != nil {
		return "", err
	}
	q.id, q.size = ev.ID, int64(len(raw))
	m.pending[q.id] = q
	q.timer = time.AfterFunc(wait, func() { m.expire(q.id) })
	m.schedulePolicyLocked(q)
	return q.id, nil
}

// Scripted reports whether the policy will settle a question from server
// with form (a valid rule matches, or --answers-only cancels it), so the
// proxy does not also hand it to the client.
func (m *Manager) Scripted(server string, form *translate.Form) bool {
	if m.policy == nil || form == nil {
		return false
	}
	d, ok, err := m.policy.Answer(server, form)
	return m.only || (ok && err == nil && !d.Timeout)
}

// schedulePolicyLocked applies the scripted answer for q, after its delay.
// A rule that does not fit the question is logged with the rule, field and
// violated rule, and the question falls through to operators, or is
// cancelled under PolicyOnly. It never reaches the server half-valid.
func (m *Manager) schedulePolicyLocked(q *question) {
	if m.policy == nil || q.spec.Form == nil {
		return
	}
	d, ok, err := m.policy.Answer(q.spec.Subject, q.spec.Form)
	cancelDecision := translate.Decision{Outcome: translate.OutcomeCancel, Applied: aep.Answer{Option: "cancel"}}
	switch {
	case err != nil:
		m.log.Error("scripted answer refused; the question falls through", "question", q.id, "err", err.Error(), "answers_only", m.only)
		if !m.only {
			return
		}
		d = script.Decision{Rule: "answers-only", Answer: cancelDecision}
	case !ok:
		if !m.only {
			return
		}
		m.log.Warn("no answers rule matches this question; cancelling it (--answers-only)", "question", q.id,
			"question_shape", script.Describe(q.spec.Subject, q.spec.Form))
		d = script.Decision{Rule: "answers-only", Answer: cancelDecision}
	case d.Timeout:
		m.log.Info("scripted timeout: the question is left to time out", "question", q.id, "rule", d.Rule)
		return
	}
	id := q.id
	q.script = time.AfterFunc(d.Delay, func() { m.autoAnswer(id, d) })
}

// autoAnswer applies a scripted answer: attention.answered by
// policy:<rule>, then attention.resolved{auto}.
func (m *Manager) autoAnswer(id string, d script.Decision) {
	m.mu.Lock()
	q, ok := m.pending[id]
	if !ok {
		m.mu.Unlock()
		return
	}
	q.stop()
	delete(m.pending, id)
	ans := m.emitAnswered(q, q.id, d.Answer.Applied, aep.AttentionAnswered{By: "policy:" + d.Rule})
	m.emitResolved(q, aep.ResolutionAuto, ans.ID)
	m.settleLocked(q, aep.ResolutionAuto, ans.ID, "policy:"+d.Rule)
	m.mu.Unlock()
	q.spec.Deliver(Resolution{Outcome: Answered, Decision: d.Answer})
}

// Respond is RespondAs for an operator with no groups.
func (m *Manager) Respond(cmd aep.Event, a aep.Answer, by string, ack func(reason, detail string) error) {
	m.RespondAs(cmd, a, by, nil, ack)
}

// RespondAs decides an operator's control.attention.respond
// (control.Target). A valid answer is acked, recorded as
// attention.answered (by: by, who the endpoint authenticated, never the
// command's own agent) and attention.resolved, and delivered; an invalid
// one is nacked invalid with the field and rule, and the question stays
// pending. groups are the operator's identity groups, as its credential
// places it (never from the command): a permission request's approvers
// may name them.
func (m *Manager) RespondAs(cmd aep.Event, a aep.Answer, by string, groups []string, ack func(reason, detail string) error) {
	m.mu.Lock()
	q, ok := m.pending[cmd.Subject]
	if !ok {
		s, late := m.outracedLocked(cmd.Subject, a, by, "control", cmd.ID)
		m.mu.Unlock()
		if late {
			ack(aep.ReasonRefused, lostDetail(cmd.Subject, s))
			return
		}
		ack(aep.ReasonInvalid, fmt.Sprintf("no pending attention request %s in this session: it is unknown or already resolved", cmd.Subject))
		return
	}
	if q.spec.Permission != nil {
		m.respondPermission(q, cmd, a, policy.Actor{Name: by, Groups: groups}, ack)
		return
	}
	if !contains(q.spec.RespondVia, "control") || (q.spec.Form == nil && q.spec.URL == "") {
		m.mu.Unlock()
		ack(aep.ReasonRefused, fmt.Sprintf("attention request %s is answered in the MCP client (respond_via has no control)", cmd.Subject))
		return
	}
	var d translate.Decision
	var err error
	if q.spec.URL != "" {
		d, err = decideURL(a)
	} else {
		d, err = q.spec.Form.Decide(a)
	}
	if err != nil {
		m.mu.Unlock()
		// The question stays pending; the detail names field and rule
		// and never quotes the answer.
		ack(aep.ReasonInvalid, err.Error())
		return
	}
	if err := ack("", ""); err != nil {
		m.log.Warn("emitting control.accepted", "cmd", cmd.ID, "err", err)
	}
	m.resolveLocked(q, d.Applied, "control", by, cmd.ID)
	m.mu.Unlock()
	q.spec.Deliver(Resolution{Outcome: Answered, Decision: d})
}

// decideURL maps an answer to a URL-mode question: option accept, decline
// or cancel, or text naming one of them (AEP-0008).
func decideURL(a aep.Answer) (translate.Decision, error) {
	opt := a.Option
	if opt == "" && a.Text != "" {
		t := strings.ToLower(strings.TrimSpace(a.Text))
		for _, o := range urlOptions {
			if t == o.ID || t == strings.ToLower(o.Label) {
				opt = o.ID
			}
		}
	}
	if a.Values != nil {
		return translate.Decision{}, &translate.InvalidAnswer{Rule: "answer", Reason: "a URL question takes option accept, decline or cancel, not values"}
	}
	switch opt {
	case "accept":
		return translate.Decision{Outcome: translate.OutcomeAccept, Applied: aep.Answer{Option: opt}}, nil
	case "decline":
		return translate.Decision{Outcome: translate.OutcomeDecline, Applied: aep.Answer{Option: opt}}, nil
	case "cancel":
		return translate.Decision{Outcome: translate.OutcomeCancel, Applied: aep.Answer{Option: opt}}, nil
	}
	return translate.Decision{}, &translate.InvalidAnswer{Rule: "answer", Reason: `a URL question takes option "accept", "decline" or "cancel"`}
}

// Complete resolves the pending URL-mode question with elicitationID, when
// the server says the out-of-band interaction completed
// (notifications/elicitation/complete): attention.resolved{auto}, and the
// server's request, if any, gets accept. Unknown or repeated ids are
// ignored; it reports whether one was pending.
func (m *Manager) Complete(elicitationID string) bool {
	if elicitationID == "" {
		return false
	}
	m.mu.Lock()
	var q *question
	for _, p := range m.pending {
		if p.spec.ElicitationID == elicitationID {
			q = p
		}
	}
	if q == nil {
		m.mu.Unlock()
		return false
	}
	q.stop()
	delete(m.pending, q.id)
	m.settleLocked(q, aep.ResolutionAuto, m.emitResolved(q, aep.ResolutionAuto, q.id), "")
	m.mu.Unlock()
	q.spec.Deliver(Resolution{Outcome: Answered, Decision: translate.Decision{Outcome: translate.OutcomeAccept, Applied: aep.Answer{Option: "accept"}}})
	return true
}

// resolveLocked emits attention.answered then attention.resolved and
// forgets the question.
func (m *Manager) resolveLocked(q *question, applied aep.Answer, via, by, cause string) {
	q.stop()
	delete(m.pending, q.id)
	ans := m.emitAnswered(q, cause, applied, aep.AttentionAnswered{By: by, Via: via})
	m.emitResolved(q, aep.ResolutionAnswered, ans.ID)
	m.settleLocked(q, aep.ResolutionAnswered, ans.ID, by)
}

// emitResolved emits attention.resolved and returns its id.
func (m *Manager) emitResolved(q *question, resolution, cause string) string {
	lat := time.Since(q.raised).Milliseconds()
	ev, _, err := m.pub.Emit(aep.Draft{Type: "attention.resolved", Subject: q.id, Cause: cause, Capture: aep.CaptureMetadata,
		Data: aep.AttentionResolved{Resolution: resolution, LatencyMS: &lat}})
	if err != nil {
		m.log.Warn("emitting attention.resolved", "id", q.id, "err", err)
	}
	return ev.ID
}

// ClientAnswered records that the MCP client answered its copy of a question
// first (route both or client). result is the client's ElicitResult. It
// reports whether the client won; when it did, the bus shows
// attention.answered{via:"oob"} and attention.resolved, and the caller
// forwards the client's response to the server.
//
// A client that loses (its answer comes after the question was settled)
// is recorded as TypeOutraced.
func (m *Manager) ClientAnswered(id, client string, result json.RawMessage) bool {
	applied := clientAnswer(result)
	m.mu.Lock()
	q, ok := m.pending[id]
	if !ok {
		m.outracedLocked(id, applied, client, "oob", id)
		m.mu.Unlock()
		return false
	}
	m.resolveLocked(q, applied, "oob", client, q.id)
	m.mu.Unlock()
	q.spec.Deliver(Resolution{Outcome: Dismissed})
	return true
}

// clientAnswer reads the client's ElicitResult as the answer it stands
// for.
func clientAnswer(result json.RawMessage) aep.Answer {
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	// Numbers stay json.Number, so the bus records the client's answer
	// exactly as the server receives it.
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	_ = dec.Decode(&r)
	applied := aep.Answer{Values: r.Content}
	if r.Action != "accept" {
		applied = aep.Answer{Option: r.Action}
	} else if applied.Values == nil {
		applied.Values = map[string]any{}
	}
	return applied
}

// Dismiss withdraws a pending question (the server cancelled its request)
// with attention.resolved{dismissed}. It reports whether it was pending.
func (m *Manager) Dismiss(id string) bool {
	m.mu.Lock()
	q, ok := m.pending[id]
	if ok {
		q.stop()
		delete(m.pending, id)
		m.settleLocked(q, aep.ResolutionDismissed, m.emitResolved(q, aep.ResolutionDismissed, q.id), "")
	}
	m.mu.Unlock()
	if ok {
		q.spec.Deliver(Resolution{Outcome: Dismissed})
	}
	return ok
}

func (m *Manager) expire(id string) {
	m.mu.Lock()
	q, ok := m.pending[id]
	if !ok {
		m.mu.Unlock()
		return
	}
	delete(m.pending, id)
	after := time.Since(q.raised).Milliseconds()
	ev, _, err := m.pub.Emit(aep.Draft{Type: "attention.timeout", Subject: q.id, Cause: q.id, Severity: aep.SeverityNotice,
		Capture: aep.CaptureMetadata, Data: aep.AttentionTimeout{AfterMS: after}})
	if err != nil {
		m.log.Warn("emitting attention.timeout", "id", q.id, "err", err)
	}
	m.settleLocked(q, "timeout", ev.ID, "")
	res := Resolution{Outcome: TimedOut, Decision: translate.Decision{Outcome: translate.OutcomeCancel}}
	if pm := q.spec.Permission; pm != nil {
		// The timer fires at the hold's deadline or after it.
		now := time.Now()
		if dl := pm.Hold.Deadline(); now.Before(dl) {
			now = dl
		}
		pm.Hold.Expire(now)
		res.Permission = pm.Hold.Outcome()
	}
	m.mu.Unlock()
	q.spec.Deliver(res)
}

// Pending lists the open questions, oldest first.
func (m *Manager) Pending() []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Info, 0, len(m.pending))
	for _, q := range m.pending {
		out = append(out, Info{ID: q.id, Subject: q.spec.Subject, Raised: q.raised, Expires: q.expires, RespondVia: q.spec.RespondVia})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Len returns the number of open questions.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

// Close dismisses every pending question (attention.resolved{dismissed})
// and refuses new ones, so the caller can then end the session with no
// request left open (AEP-0002 §7 rule 2).
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	qs := make([]*question, 0, len(m.pending))
	for _, q := range m.pending {
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].id < qs[j].id })
	for _, q := range qs {
		q.stop()
		delete(m.pending, q.id)
		m.settleLocked(q, aep.ResolutionDismissed, m.emitResolved(q, aep.ResolutionDismissed, q.id), "")
	}
	m.mu.Unlock()
	for _, q := range qs {
		q.spec.Deliver(Resolution{Outcome: Dismissed})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package elicit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// A tool call under an approval policy (Options.Policy). Every tools/call
// the client sends is decided before anything reaches the server:
//   - allow: the call goes on byte for byte, as without a policy;
//   - deny: the client gets a CallToolResult with isError and the reason,
//     so the model can read it, and the server never sees the call;
//   - ask: the call is held (the held table) and a permission request is
//     raised (attention.Spec.Permission); the client's request is tracked
//     as in flight, so keepalive progress reaches it and the end of the
//     session answers it. An approval releases the call's original bytes
//     to the server; a denial or a timeout under on_timeout: deny answers
//     as a deny rule does; the client's notifications/cancelled dismisses
//     the request and nothing reaches the server.
//
// Every decision is on the bus: tool.requested (with args_digest, and the
// arguments as the capture ceiling allows), then tool.denied{by, rule}, or
// the call's tool.completed or tool.failed when the server answers.

// PolicySource is the approval policy in force: a *policy.Reloader, whose
// policy a reload replaces. A call is decided by the policy in force when
// it arrives, and a held call keeps the revision it was held under.
type PolicySource interface {
	Policy() *policy.Policy
}

// MaxEventArgs bounds the arguments tool.requested carries, in bytes of
// JSON: larger arguments are recorded by their digest alone.
const MaxEventArgs = 64 << 10

// heldCall is a tools/call waiting for its approvers, in the held table
// under the client's request id key.
type heldCall struct {
	id  json.RawMessage
	raw []byte // the request as the server gets it, once released
	// qid is the permission request's id, once raised; cancelled is set
	// when the client cancelled the call before that.
	qid       string
	cancelled bool
	call      *toolCall
}

// toolCall is a tools/call the bus has seen requested, until its end
// (tool.completed, tool.failed or tool.denied).
type toolCall struct {
	tool, callID, rule string
	// requested is the id of its tool.requested event (the cause of
	// what follows).
	requested string
	start     time.Time
}

// toolParams are the members of tools/call params the policy reads.
type toolParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// policyCall decides a client's tools/call under the policy in force. It
// returns what to forward (raw, when the call may pass) and whether it
// took the call over (denied or held): the caller then forwards nothing
// and does not track it.
func (p *Proxy) policyCall(m *message, raw []byte, declared bool) ([]byte, bool) {
	pol := p.pol.Policy()
	if pol == nil {
		return raw, false
	}
	var params toolParams
	if err := json.Unmarshal(m.Params, &params); err != nil || params.Name == nil {
		// What the policy cannot read never passes it.
		p.writeClient(errorResponse(m.ID, codeInvalidParams, "Invalid params: tools/call needs params, an object with name, a string; the approval policy decides by the tool's name"))
		return nil, true
	}
	if k := ambiguousKey(m.Params); k != "" {
		// encoding/json reads keys in any case, the last one winning, and
		// other readers take the exact key: two such keys could name one
		// call to the policy and another to the server.
		p.writeClient(errorResponse(m.ID, codeInvalidParams, fmt.Sprintf("Invalid params: the tools/call params hold the key %q twice, or in two spellings that differ only in case; the approval policy cannot tell which one the server reads, so the call is refused: send each key once", k)))
		return nil, true
	}
	args := params.Arguments
	if string(bytes.TrimSpace(args)) == "null" {
		args = nil
	}
	p.mu.Lock()
	server := p.subjectLocked()
	p.mu.Unlock()
	d := pol.Decide(policy.Call{Server: server, Tool: *params.Name, Client: p.polClient, Arguments: args})
	digest := policy.ArgsDigest(args)
	tc := &toolCall{tool: *params.Name, callID: callID(m.ID), rule: d.Rule, start: time.Now()}
	tc.requested = p.emitTool("tool.requested", tc, "", p.toolRequested(tc, digest, args))
	if d.Fault != "" {
		// The fault may quote argument values: it goes to the log at
		// debug level only, never to the bus.
		p.log.Debug("a policy condition could not be evaluated; the decision is the more cautious", "rule", d.Rule, "action", d.Action.String())
	}
	switch d.Action {
	case policy.Deny:
		p.denyCall(m.ID, tc, "policy", denyText(d.Reason, "the approval policy denies this tool call", d.Rule))
		return nil, true
	case policy.Ask:
		if _, ok := p.mem.Lookup(d, p.session, digest, time.Now()); ok {
			p.log.Info("a tool call passes under an allow-session approval", "rule", d.Rule, "tool", tc.tool)
			break
		}
		p.holdCall(m, raw, declared, d, digest, args, tc)
		return nil, true
	}
	p.mu.Lock()
	p.calls.put(m.key(), tc)
	p.mu.Unlock()
	return raw, false
}

// holdCall holds a tools/call that d asks about and raises its permission
// request.
func (p *Proxy) holdCall(m *message, raw []byte, declared bool, d policy.Decision, digest string, args json.RawMessage, tc *toolCall) {
	k := m.key()
	hold, err := policy.NewHold(d, p.session, digest, time.Now())
	if err != nil {
		p.log.Error("holding a tool call", "err", err)
		p.denyCall(m.ID, tc, "runtime", "the bridge could not hold this tool call for approval; it was not run")
		return
	}
	hc := &heldCall{id: bytes.Clone(m.ID), raw: bytes.Clone(raw), call: tc}
	// Tracked as any request the server has not answered: keepalive
	// progress reaches it, and FailInflight answers it at the end.
	p.track(m, declared)
	p.mu.Lock()
	if _, old, evicted := p.held.put(k, hc); evicted {
		p.mu.Unlock()
		p.log.Warn("forgot the oldest held tool call: too many held at once", "limit", p.maxTracked)
		p.dismissHeld(old)
		p.mu.Lock()
	}
	server := p.subjectLocked()
	p.mu.Unlock()
	spec := attention.Spec{Subject: server, RespondVia: []string{"control"},
		Permission: &attention.Permission{Hold: hold, Tool: tc.tool, Client: p.polClient, Arguments: args, Digest: digest, Cause: tc.requested},
		Deliver:    func(r attention.Resolution) { p.later(func() { p.released(k, hc, r) }) }}
	qid, err := p.raise(spec)
	p.mu.Lock()
	hc.qid = qid
	cancelled := hc.cancelled
	if err != nil {
		delIf(p.held, k, hc)
		p.untrackLocked(k)
	}
	p.mu.Unlock()
	switch {
	case err != nil:
		p.log.Warn("a tool call that needs approval could not be asked about; it is denied", "rule", d.Rule, "err", err)
		p.denyCall(m.ID, tc, "runtime", "the approval policy requires an operator's approval for this tool call, but the bridge could not ask: "+err.Error()+"; the call was not run")
	case cancelled:
		p.mgr.Dismiss(qid)
	default:
		p.log.Info("a tool call is held for approval", "rule", d.Rule, "tool", tc.tool, "request", qid, "approvals", d.Ask.Approvals)
	}
}

// released acts on a held call's resolution, on the proxy's own
// goroutine: an allowed call goes to the server as the client sent it, a
// denied one is answered with the reason. A dismissed request (the client
// cancelled, the session is ending) sends nothing: FailInflight answers a
// request the session's end leaves open.
func (p *Proxy) released(k string, hc *heldCall, r attention.Resolution) {
	p.mu.Lock()
	cur, ok := p.held.get(k)
	if !ok || cur != hc {
		p.mu.Unlock()
		return // the client cancelled it
	}
	p.held.del(k)
	if r.Outcome == attention.Dismissed {
		p.mu.Unlock()
		return
	}
	out := r.Permission
	if out.State != policy.Allowed {
		p.untrackLocked(k)
		p.mu.Unlock()
		by, who := "policy", "the approval policy"
		if out.DeniedBy != "" {
			by, who = "user_setting", "operator "+out.DeniedBy
		}
		text := fmt.Sprintf("%s denied this tool call", who)
		if out.Reason != "" {
			text += ": " + out.Reason
		}
		p.denyCall(hc.id, hc.call, by, text)
		return
	}
	p.calls.put(k, hc.call)
	p.mu.Unlock()
	if g := out.Grant; g != nil && g.Scope == policy.ScopeSession {
		if err := p.mem.Remember(g); err != nil {
			p.log.Warn("remembering an allow-session approval", "err", err)
		}
	}
	p.log.Info("a held tool call was approved and goes to the server", "rule", hc.call.rule, "by", strings.Join(out.Approved, ","), "timed_out", out.TimedOut)
	p.writeServer(hc.raw)
}

// cancelHeld handles the client's notifications/cancelled for a held
// call: the permission request is dismissed and the server, which never
// saw the call, is told nothing. It reports whether k was held.
func (p *Proxy) cancelHeld(k string) bool {
	p.mu.Lock()
	hc, ok := p.held.take(k)
	if !ok {
		p.mu.Unlock()
		return false
	}
	p.untrackLocked(k)
	qid := hc.qid
	if qid == "" {
		hc.cancelled = true // holdCall dismisses it once raised
	}
	p.mu.Unlock()
	p.dismissHeld(hc)
	p.log.Info("the client cancelled a held tool call; its permission request is dismissed", "request", qid)
	return true
}

// dismissHeld dismisses a held call's permission request, once raised.
func (p *Proxy) dismissHeld(hc *heldCall) {
	p.mu.Lock()
	qid := hc.qid
	hc.cancelled = true
	p.mu.Unlock()
	if qid != "" {
		p.mgr.Dismiss(qid)
	}
}

// denyCall answers the client's tools/call with a tool result that is an
// error carrying text (MCP server/tools: an error the model can read),
// and records tool.denied.
func (p *Proxy) denyCall(id json.RawMessage, tc *toolCall, by, text string) {
	p.emitTool("tool.denied", tc, tc.requested, toolDenied{Tool: tc.ref(), By: by, Rule: tc.rule})
	res := mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}, IsError: true}
	b, err := resultResponse(id, res)
	if err != nil {
		b = errorResponse(id, codeInternal, text)
	}
	p.writeClient(b)
}

// toolResult records the end of a tools/call the server answered:
// tool.completed, or tool.failed for a JSON-RPC error or a result with
// isError.
func (p *Proxy) toolResult(m *message) {
	if p.pol == nil || !m.hasID() {
		return
	}
	p.mu.Lock()
	tc, ok := p.calls.take(m.key())
	p.mu.Unlock()
	if !ok {
		return
	}
	p.endTool(tc, len(m.Error) > 0, resultIsError(m.Result))
}

// endTool emits a tool call's tool.completed or tool.failed.
func (p *Proxy) endTool(tc *toolCall, rpcErr, isError bool) {
	ms := time.Since(tc.start).Milliseconds()
	switch {
	case rpcErr:
		p.emitTool("tool.failed", tc, tc.requested, toolFailed{Tool: tc.ref(), Error: errorInfo{Type: "jsonrpc_error"}, DurationMS: ms})
	case isError:
		p.emitTool("tool.failed", tc, tc.requested, toolFailed{Tool: tc.ref(), Error: errorInfo{Type: "tool_error"}, DurationMS: ms})
	default:
		p.emitTool("tool.completed", tc, tc.requested, toolCompleted{Tool: tc.ref(), Status: "success", DurationMS: ms})
	}
}

// ambiguousKey returns a key that some object in raw holds twice, exactly
// or under case folding ("" when there is none, or raw is not JSON, which
// the decode before it refuses). Nesting deeper than maxParseDepth is not
// looked into: such params never reach here (message.parse refuses them).
func ambiguousKey(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func(depth int) (string, bool)
	walk = func(depth int) (string, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		d, ok := tok.(json.Delim)
		if !ok || depth > maxParseDepth {
			return "", true
		}
		switch d {
		case '{':
			seen := map[string]struct{}{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false
				}
				k, _ := kt.(string)
				fold := strings.ToLower(k)
				if _, dup := seen[fold]; dup {
					return k, true
				}
				seen[fold] = struct{}{}
				if k, ok := walk(depth + 1); k != "" || !ok {
					return k, ok
				}
			}
			dec.Token() // }
		case '[':
			for dec.More() {
				if k, ok := walk(depth + 1); k != "" || !ok {
					return k, ok
				}
			}
			dec.Token() // ]
		}
		return "", true
	}
	k, _ := walk(0)
	return k
}

// resultIsError reads a CallToolResult's isError.
func resultIsError(result json.RawMessage) bool {
	if !bytes.Contains(result, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

// emitTool publishes a tool.* event for tc and returns its id ("" when
// there is no publisher or it failed).
func (p *Proxy) emitTool(typ string, tc *toolCall, cause string, data any) string {
	if p.pub == nil {
		return ""
	}
	ev, _, err := p.pub.Emit(aep.Draft{Type: typ, Subject: tc.tool, Cause: cause, Capture: aep.CaptureFull, Data: data})
	if err != nil {
		p.log.Warn("emitting "+typ, "err", err)
		return ""
	}
	return ev.ID
}

func (tc *toolCall) ref() toolRef { return toolRef{Name: tc.tool, CallID: tc.callID} }

// The tool.* payloads (AEP-0002 §5.3); the emitter gates each member to
// its capture level.
type (
	toolRef struct {
		Name   string `json:"name"`
		CallID string `json:"call_id,omitempty"`
	}
	errorInfo struct {
		Type string `json:"type,omitempty"`
	}
	toolRequestedData struct {
		Tool         toolRef        `json:"tool"`
		ArgsDigest   string         `json:"args_digest,omitempty"`
		ArgsRedacted map[string]any `json:"args_redacted,omitempty"`
		Args         map[string]any `json:"args,omitempty"`
	}
	toolDenied struct {
		Tool toolRef `json:"tool"`
		By   string  `json:"by"`
		Rule string  `json:"rule,omitempty"`
	}
	toolFailed struct {
		Tool       toolRef   `json:"tool"`
		Error      errorInfo `json:"error"`
		DurationMS int64     `json:"duration_ms"`
	}
	toolCompleted struct {
		Tool       toolRef `json:"tool"`
		Status     string  `json:"status"`
		DurationMS int64   `json:"duration_ms"`
	}
)

// toolRequested is tool.requested's data: the digest always, and the
// arguments (args at full, args_redacted through the §9.4 pipeline at
// redacted) when they are a JSON object of at most MaxEventArgs bytes;
// the emitter drops what is above its ceiling.
func (p *Proxy) toolRequested(tc *toolCall, digest string, args json.RawMessage) toolRequestedData {
	d := toolRequestedData{Tool: tc.ref(), ArgsDigest: digest}
	if len(args) == 0 || len(args) > MaxEventArgs {
		return d
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&v) != nil || v == nil {
		return d
	}
	d.Args = v
	if red, ok := p.red.Value(v).(map[string]any); ok {
		d.ArgsRedacted = red
	}
	return d
}

// callID is the tool_ref call_id: the client's request id as JSON text.
func callID(id json.RawMessage) string {
	s := string(id)
	if len(s) > 2 && s[0] == '"' {
		var v string
		if json.Unmarshal(id, &v) == nil {
			return v
		}
	}
	return s
}

// denyText is the text a denied call's result carries.
func denyText(reason, fallback, rule string) string {
	if reason == "" {
		reason = fallback
	}
	if rule == "" {
		return reason
	}
	return fmt.Sprintf("%s (approval policy rule %s)", reason, rule)
}

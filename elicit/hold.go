package elicit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
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
	// grant is the approval it went to the server under, when operators
	// approved it: its retries (2026-07-28 input_required) are the same
	// call and pass under it (retryGrant).
	grant *policy.Grant
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
	params, err := readToolParams(m.Params)
	if err != nil || params.Name == nil {
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
	tc := &toolCall{tool: *params.Name, callID: callID(m.ID), rule: d.Rule, start: time.Now()}
	if d.Fault != "" {
		// The fault may quote argument values: it goes to the log at
		// debug level only, never to the bus.
		p.log.Debug("a policy condition could not be evaluated; the decision is the more cautious", "rule", d.Rule, "action", d.Action.String())
	}
	// params.Arguments is the decoder's copy, not a slice of the frame:
	// the event may keep it.
	requested := toolEvent{typ: "tool.requested", tc: tc, args: args}
	switch d.Action {
	case policy.Deny:
		// After the events queued before it, as every event the proxy
		// emits at once.
		p.flushTools(&requested)
		p.denyCall(m.ID, tc, "policy", denyText(d.Reason, "the approval policy denies this tool call", d.Rule))
		return nil, true
	case policy.Ask:
		requested.digest = policy.ArgsDigest(args)
		if _, ok := p.mem.Lookup(d, p.session, requested.digest, time.Now()); ok {
			p.log.Info("a tool call passes under an allow-session approval", "rule", d.Rule, "tool", tc.tool)
			break
		}
		if g, ok := p.retryGrant(m, d, requested.digest); ok {
			tc.grant = g
			p.log.Info("a retry of an approved tool call passes under its approval", "rule", d.Rule, "tool", tc.tool, "by", strings.Join(g.By, ","))
			break
		}
		// The permission request names tool.requested as its cause, so
		// it is emitted first, here: a held call waits for people, not
		// for the emitter.
		p.flushTools(&requested)
		p.holdCall(m, raw, declared, d, requested.digest, args, tc)
		return nil, true
	}
	// An allowed call goes on at once: its tool.requested, and later its
	// end, are emitted off its path, in order (toolevents.go).
	p.queueTool(requested)
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
	hc.call.grant = out.Grant
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

// noteRetry keeps the approval of an approved tools/call the server
// answered with input_required (MCP 2026-07-28), under the result's
// requestState: the client's retry carrying it is the same call, and
// passes under the approval (retryGrant) instead of being asked about
// again. The approval is renewed for CallGrantWindow from this answer,
// so a round the client takes its time over (a person answering in the
// client) stays covered; every other binding (session, rule and its
// hash, policy revision, argument digest) stays as approved.
func (p *Proxy) noteRetry(m *message) {
	if p.pol == nil || !m.hasID() || jsonrpc.DecodeString(m.ResultType) != string(mcp.ResultTypeInputRequired) {
		return
	}
	p.mu.Lock()
	tc, ok := p.calls.get(m.key())
	p.mu.Unlock()
	if !ok || tc.grant == nil {
		return
	}
	var res struct {
		RequestState string `json:"requestState"`
	}
	if json.Unmarshal(m.Result, &res) != nil || res.RequestState == "" {
		return
	}
	g := *tc.grant
	if now := time.Now(); g.Scope == policy.ScopeCall && (g.Expires.IsZero() || now.Add(policy.CallGrantWindow).After(g.Expires)) {
		g.Expires = now.Add(policy.CallGrantWindow)
	}
	p.mu.Lock()
	p.retries.put(res.RequestState, &g)
	p.mu.Unlock()
}

// retryGrant returns the approval a client's tools/call passes under as
// the retry of an approved call: it carries the requestState the server
// gave that call (noteRetry), and the approval covers it (the same
// session, the same rule, unchanged, deciding it under the same policy
// revision, the same argument digest, before it expires). The
// requestState is used once.
func (p *Proxy) retryGrant(m *message, d policy.Decision, digest string) (*policy.Grant, bool) {
	state := jsonrpc.DecodeString(m.ReqState)
	if state == "" {
		return nil, false
	}
	p.mu.Lock()
	g, ok := p.retries.take(state)
	p.mu.Unlock()
	if !ok || !g.Covers(d, p.session, digest, time.Now()) {
		return nil, false
	}
	return g, true
}

// denyCall answers the client's tools/call with a tool result that is an
// error carrying text (MCP server/tools: an error the model can read),
// and records tool.denied.
func (p *Proxy) denyCall(id json.RawMessage, tc *toolCall, by, text string) {
	p.flushTools(&toolEvent{typ: "tool.denied", tc: tc, data: aep.ToolDenied{Tool: tc.ref(), By: by, Rule: tc.rule}})
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

// streamedToolResult records the end of a tools/call whose response the
// proxy relayed as a stream, answering the client's request id: read from
// the envelope and the result's isError, which the scan captured on the
// way through, never from a copy of the result.
func (p *Proxy) streamedToolResult(id json.RawMessage, env *jsonrpc.Envelope) {
	if p.pol == nil || !jsonrpc.HasID(id) {
		return
	}
	p.mu.Lock()
	tc, ok := p.calls.take(idKey(id))
	p.mu.Unlock()
	if !ok {
		return
	}
	p.endTool(tc, env.Error, string(env.Members["result.isError"]) == "true")
}

// endTool emits a tool call's tool.completed or tool.failed, off the
// path of the response that ends it.
func (p *Proxy) endTool(tc *toolCall, rpcErr, isError bool) {
	ms := time.Since(tc.start).Milliseconds()
	switch {
	case rpcErr:
		p.queueTool(toolEvent{typ: "tool.failed", tc: tc, data: aep.ToolFailed{Tool: tc.ref(), ErrorType: "jsonrpc_error", DurationMS: ms}})
	case isError:
		p.queueTool(toolEvent{typ: "tool.failed", tc: tc, data: aep.ToolFailed{Tool: tc.ref(), ErrorType: "tool_error", DurationMS: ms}})
	default:
		p.queueTool(toolEvent{typ: "tool.completed", tc: tc, data: aep.ToolCompleted{Tool: tc.ref(), Status: "success", DurationMS: ms}})
	}
}

// ambiguousKey returns a key that some object in raw holds twice, exactly
// or under the case folding encoding/json matches keys by (Unicode
// simple folding, as strings.EqualFold: "argumentſ" is "arguments" to
// it), in document order: the first key that repeats one before it in
// its object. It returns "" when there
// is none. raw must be valid JSON (the decode before it checks): the scan
// reads structure only, in one pass, with no allocation for objects of
// ASCII keys without escapes, and no recursion, whatever the nesting.
func ambiguousKey(raw []byte) string {
	var sc keyScan
	expectKey := false
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			sc.push(true)
			expectKey = true
		case '[':
			sc.push(false)
			expectKey = false
		case '}', ']':
			sc.pop()
			expectKey = false
		case ',':
			expectKey = sc.inObject()
		case '"':
			start := i + 1
			escaped := false
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					escaped = true
					i++
				}
			}
			if expectKey {
				if k := sc.key(raw[start:i], escaped); k != "" {
					return k
				}
				expectKey = false
			}
		}
	}
	return ""
}

// keyScan is ambiguousKey's stack of open objects and arrays, with the
// keys each open object has shown so far.
type keyScan struct {
	// frames are the open containers, innermost last; keys holds the
	// keys of the open objects, each frame's from its from.
	frames []keyFrame
	keys   []scannedKey
}

type keyFrame struct {
	object bool
	from   int
	// folded holds the object's folded keys once it has more than
	// linearKeys of them, so a large object costs one lookup per key.
	folded map[string]struct{}
}

type scannedKey struct {
	raw     []byte // between the quotes, as written
	escaped bool
}

// linearKeys is how many keys an object's new keys are compared with one
// by one; past it they are looked up in a set.
const linearKeys = 16

func (s *keyScan) push(object bool) {
	s.frames = append(s.frames, keyFrame{object: object, from: len(s.keys)})
}

func (s *keyScan) pop() {
	if n := len(s.frames); n > 0 {
		s.keys = s.keys[:s.frames[n-1].from]
		s.frames = s.frames[:n-1]
	}
}

func (s *keyScan) inObject() bool {
	n := len(s.frames)
	return n > 0 && s.frames[n-1].object
}

// key records k, a key of the innermost object, and returns it, unquoted,
// when the object already holds it or a key that folds to the same.
func (s *keyScan) key(raw []byte, escaped bool) string {
	n := len(s.frames)
	if n == 0 {
		return ""
	}
	f := &s.frames[n-1]
	k := scannedKey{raw: raw, escaped: escaped}
	if f.folded == nil && len(s.keys)-f.from < linearKeys {
		for _, prev := range s.keys[f.from:] {
			if sameFolded(prev, k) {
				return k.text()
			}
		}
		s.keys = append(s.keys, k)
		return ""
	}
	if f.folded == nil {
		f.folded = make(map[string]struct{}, 2*linearKeys)
		for _, prev := range s.keys[f.from:] {
			f.folded[foldKey(prev.text())] = struct{}{}
		}
	}
	fold := foldKey(k.text())
	if _, dup := f.folded[fold]; dup {
		return k.text()
	}
	f.folded[fold] = struct{}{}
	s.keys = append(s.keys, k)
	return ""
}

// text is the key's string value.
func (k scannedKey) text() string {
	if !k.escaped {
		return string(k.raw)
	}
	var v string
	q := make([]byte, 0, len(k.raw)+2)
	q = append(append(append(q, '"'), k.raw...), '"')
	if json.Unmarshal(q, &v) != nil {
		return string(k.raw)
	}
	return v
}

// sameFolded reports whether a and b are the same key under case
// folding: byte by byte for ASCII keys as written, through their values
// otherwise.
func sameFolded(a, b scannedKey) bool {
	if !a.escaped && !b.escaped && isASCII(a.raw) && isASCII(b.raw) {
		if len(a.raw) != len(b.raw) {
			return false
		}
		for i := range a.raw {
			if lowerASCII(a.raw[i]) != lowerASCII(b.raw[i]) {
				return false
			}
		}
		return true
	}
	return strings.EqualFold(a.text(), b.text())
}

// foldKey is the one spelling of every key that strings.EqualFold holds
// equal to k: each rune replaced by the smallest of its fold set.
func foldKey(k string) string {
	b := make([]byte, 0, len(k))
	for _, r := range k {
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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

func (tc *toolCall) ref() aep.ToolRef { return aep.ToolRef{Name: tc.tool, CallID: tc.callID} }

// toolRequestedData is tool.requested's data with the arguments (AEP-0002
// §5.3); the emitter gates each member to its capture level. Without
// them it is an aep.ToolRequested, which the emitter encodes by hand.
type toolRequestedData struct {
	Tool         aep.ToolRef    `json:"tool"`
	ArgsDigest   string         `json:"args_digest,omitempty"`
	ArgsRedacted map[string]any `json:"args_redacted,omitempty"`
	Args         map[string]any `json:"args,omitempty"`
}

// toolRequested is tool.requested's data: the digest always, and the
// arguments (args at full, args_redacted through the §9.4 pipeline at
// redacted) when they are a JSON object of at most MaxEventArgs bytes;
// the emitter drops what is above its ceiling.
//
// The event is emitted at capture full, which a ceiling below full
// down-levels to metadata (a full event never lands on redacted,
// AEP-0001 §8.2(e)): below full neither member is built.
func (p *Proxy) toolRequested(tc *toolCall, digest string, args json.RawMessage) any {
	d := aep.ToolRequested{Tool: tc.ref(), ArgsDigest: digest}
	if len(args) == 0 || len(args) > MaxEventArgs {
		return d
	}
	ceiling := aep.CaptureFull
	if c, ok := p.pub.(ceilinged); ok {
		ceiling = c.Ceiling("tool.requested")
	}
	if aep.Landing(aep.CaptureFull, ceiling) < aep.CaptureRedacted {
		return d // the emitter would drop both: neither is built
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&v) != nil || v == nil {
		return d
	}
	full := toolRequestedData{Tool: d.Tool, ArgsDigest: digest, Args: v}
	if red, ok := p.red.Value(v).(map[string]any); ok {
		full.ArgsRedacted = red
	}
	return full
}

// ceilinged is a Publisher that says the capture ceiling of an event
// type (a bus.Emitter does): what is above it is not built at all.
type ceilinged interface {
	Ceiling(typ string) aep.Capture
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

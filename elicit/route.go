package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// each parses a frame's message as one message or a batch, runs the
// side's handler on every message, and returns what to forward: the
// message itself when nothing was changed (bytes, never re-encoded
// messages), a rebuilt batch of the kept elements, or nil. Unparseable
// input is answered to its sender with a JSON-RPC error and never
// forwarded.
func (p *Proxy) each(fr Frame, fromClient bool) ([]byte, bool) {
	raw := fr.Head
	handle, reply := p.serverMessage, p.writeServer
	if fromClient {
		handle, reply = p.clientMessage, p.writeClient
	}
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) > 0 && t[0] == '[' {
		return p.eachInBatch(fr, t, fromClient, handle, reply)
	}
	var m message
	if err := m.parse(t); err != nil {
		p.undecodable(raw, err, fromClient, reply)
		return nil, false
	}
	m.related = fr.Related
	// Called directly, not through handle, so m stays on the stack.
	if fromClient {
		return p.clientMessage(&m, raw), true
	}
	return p.serverMessage(&m, raw), true
}

// undecodable handles a message the proxy could not parse whole: one
// nested too deep is relayed as a stream, whose envelope is all the proxy
// reads; anything else is answered on reply with an error carrying the
// message's id when one can be read, and never forwarded.
func (p *Proxy) undecodable(raw []byte, err error, fromClient bool, reply func([]byte)) {
	env, serr := jsonrpc.Scan(raw, jsonrpc.ScanOptions{})
	switch {
	case serr == nil && env.MaxDepth > maxParseDepth:
		p.relayStream(p.ctx, Frame{Head: raw}, fromClient)
	case errors.Is(err, errNotJSON):
		if serr == nil {
			serr = errors.New("it breaks deeper inside") // the scanner reads two levels
		}
		p.log.Warn("malformed JSON-RPC message; answered with a parse error", "err", serr)
		reply(errorResponse(env.ID, codeParseError, "Parse error: the message is not valid JSON: "+serr.Error()))
	default:
		p.log.Warn("invalid JSON-RPC message; answered with an error", "err", err)
		reply(errorResponse(env.ID, codeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message object: "+err.Error()))
	}
}

// eachInBatch is each for a batch (t is raw without leading space): raw
// itself when no element changed, otherwise the kept elements re-joined.
func (p *Proxy) eachInBatch(fr Frame, t []byte, fromClient bool, handle func(*message, []byte) []byte, reply func([]byte)) ([]byte, bool) {
	raw := fr.Head
	var elems []json.RawMessage
	if err := json.Unmarshal(t, &elems); err != nil {
		if env, serr := jsonrpc.Scan(raw, jsonrpc.ScanOptions{}); serr == nil && env.MaxDepth > maxParseDepth {
			p.relayStream(p.ctx, Frame{Head: raw}, fromClient)
			return nil, false
		}
		p.log.Warn("malformed JSON-RPC batch; answered with a parse error", "err", err)
		reply(errorResponse(nil, codeParseError, "Parse error: the batch is not valid JSON"))
		return nil, false
	}
	if len(elems) == 0 {
		reply(errorResponse(nil, codeInvalidRequest, "Invalid Request: empty batch"))
		return nil, false
	}
	kept := make([]json.RawMessage, 0, len(elems))
	changed := false
	for _, e := range elems {
		var m message
		if err := m.parse(e); err != nil {
			reply(errorResponse(nil, codeInvalidRequest, "Invalid Request: a batch element is not a JSON-RPC message"))
			changed = true
			continue
		}
		m.related = fr.Related
		out := handle(&m, e)
		if out == nil || !bytes.Equal(out, e) {
			changed = true
		}
		if out != nil {
			kept = append(kept, out)
		}
	}
	if !changed {
		return raw, true
	}
	if len(kept) == 0 {
		return nil, true
	}
	b, _ := json.Marshal(kept)
	return b, true
}

// clientMessage handles one client message and returns what to forward.
func (p *Proxy) clientMessage(m *message, raw []byte) []byte {
	p.startSession(m)
	switch {
	case m.isRequest():
		if m.Method == string(mcp.MethodInitialize) {
			raw = p.rewriteInitialize(m, raw)
		}
		out, handled := p.clientRetry(m, raw)
		if handled {
			return out
		}
		raw = out // the client's retry, with the answers operators gave first
		var declared bool
		raw, declared = p.injectMetaCapabilities(m, raw)
		if p.pol != nil && m.Method == string(mcp.MethodToolsCall) {
			var took bool
			if raw, took = p.policyCall(m, raw, declared); took {
				return nil // denied, or held for approval (hold.go)
			}
		}
		p.track(m, declared)
		return raw
	case m.isResponse():
		if out, handled := p.clientAnswer(m, raw); handled {
			return out
		}
	case m.isNotification() && m.Method == string(mcp.MethodToolsCall) && p.pol != nil:
		// A tools/call without an id asks for nothing back, and a
		// lenient server might still run it: under an approval policy
		// no call reaches the server undecided.
		p.log.Warn("dropped a tools/call sent as a notification (no id): the approval policy decides only requests")
		return nil
	case m.isNotification() && m.Method == string(mcp.MethodNotificationCancelled):
		// The client gave up on a request: the server will not answer
		// it, so stop tracking it (no keepalive, no error at shutdown).
		var params struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &params) == nil && len(params.RequestID) > 0 {
			k := idKey(params.RequestID)
			if p.cancelHeld(k) {
				return nil // the server never saw the held call
			}
			p.mu.Lock()
			p.untrackLocked(k)
			p.mu.Unlock()
			p.endRequest(k)
		}
	}
	return raw
}

// serverMessage handles one server message and returns what to forward.
func (p *Proxy) serverMessage(m *message, raw []byte) []byte {
	switch {
	case m.isResponse():
		p.learnServer(m)
		p.noteRetry(m)
		if p.roundResponse(m) {
			return nil // the answer to one of the bridge's own retries
		}
		if p.staleResult(m.ID) {
			// The client already got a response (the bridge's error),
			// or the request is a retry of the bridge's it forgot.
			p.log.Debug("dropped the server's late response to a request the bridge stopped waiting for")
			return nil
		}
		if out, handled := p.inputRequired(m, raw); handled {
			return out
		}
		p.toolResult(m)
		p.settle(m)
		if len(m.Error) > 0 {
			p.urlRequired(m)
		}
	case m.isRequest():
		p.reviveQuestionID(m.ID)
		if m.Method == string(mcp.MethodElicitationCreate) {
			return p.elicit(m, raw)
		}
	case m.isNotification():
		switch m.Method {
		case string(mcp.MethodNotificationCancelled):
			return p.serverCancelled(m, raw)
		case string(mcp.MethodNotificationProgress):
			p.noteProgress(m)
		case string(mcp.MethodNotificationElicitationComplete):
			return p.elicitationComplete(m, raw)
		}
	}
	return raw
}

// track remembers a client request until the server answers it. A
// request that may end in input_required keeps its params, for the
// bridge's retries; declared says the client itself declared elicitation
// for it.
func (p *Proxy) track(m *message, declared bool) {
	r := &inflight{id: m.ID, method: m.Method}
	if mayAskForInput(m.Method) {
		r.params, r.clientElicit = m.Params, declared
	}
	meta := m.Meta
	if bytes.Contains(meta, []byte(`"progressToken"`)) {
		var mt struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		}
		if json.Unmarshal(meta, &mt) == nil && jsonrpc.HasID(mt.ProgressToken) {
			r.token = mt.ProgressToken
		}
	}
	k := m.key()
	tk := ""
	p.mu.Lock()
	// The client reused the id: it is live again.
	p.abandoned.del(k)
	p.goneRequests.remove(k)
	if r.token != nil {
		// Only the tokens of tracked requests have a high-water mark:
		// noteProgress ignores any other, so a peer cannot grow progress
		// with tokens of its own making.
		if tk = idKey(r.token); !hasKey(p.progress, tk) {
			p.progress[tk] = 0
		}
	}
	_, f, forgot := p.inflight.put(k, r)
	if forgot {
		if f.token != nil && idKey(f.token) != tk {
			delete(p.progress, idKey(f.token))
		}
		if old, _, evicted := p.abandoned.put(idKey(f.id), struct{}{}); evicted {
			p.goneRequests.add(old) // its late response is still stale
		}
	}
	p.mu.Unlock()
	if forgot {
		p.forgetRequest(f)
	}
}

// forgetRequest ends a client request the bridge stopped tracking because
// too many others await the server: its questions end with it, the server
// is told it is cancelled, and the client gets an error that says the
// bridge stopped waiting, never silence. The server's late response to
// it is dropped (abandoned).
func (p *Proxy) forgetRequest(r *inflight) {
	k := idKey(r.id)
	p.mu.Lock()
	answered := p.byClient[k] != nil // its input_required came: the server has answered it
	p.mu.Unlock()
	p.log.Warn("forgot the oldest client request the server has not answered; too many in flight", "limit", p.maxTracked)
	p.endRequest(k)
	if !answered && r.method != string(mcp.MethodInitialize) {
		// MCP basic/utilities/cancellation: initialize is never cancelled.
		n, _ := notification(mcp.MethodNotificationCancelled, map[string]any{"requestId": r.id, "reason": "the bridge stopped waiting for this request"})
		p.writeServer(n)
	}
	p.writeClient(errorResponse(r.id, codeInternal, fmt.Sprintf("the bridge stopped waiting for the server's response to this request: more than %d of the client's requests awaited the server at once; retry it, or wait for the others to complete first", p.maxTracked)))
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

// untrackLocked forgets the client request with id key k and its
// progress token, and returns it (nil when it was not tracked); p.mu is
// held.
func (p *Proxy) untrackLocked(k string) *inflight {
	r, _ := p.inflight.take(k)
	if r != nil && r.token != nil {
		delete(p.progress, idKey(r.token))
	}
	return r
}

// settle forgets the client request a server response answers; the end
// of that request ends its questions.
func (p *Proxy) settle(m *message) {
	if !m.hasID() {
		return
	}
	k := m.key()
	p.mu.Lock()
	r := p.untrackLocked(k)
	p.mu.Unlock()
	if r != nil {
		p.endRequest(k)
	}
}

package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// stateless serves an MCP 2026-07-28 request that carries its protocol
// version in _meta and comes without a session. With a spawned server it
// goes to its principal's shared session (shared.go). With a remote one
// it gets a one-shot session: a bridge session of its own (its own upstream, AEP session,
// log and questions) that lives while the request is in flight. When the
// upstream answers input_required (MCP 2026-07-28 multi round-trip
// requests) with a requestState, the client gets a wrapper the gateway
// minted instead (requeststate.go), and the session stays until the
// retry that echoes it, which the same session serves, so a question an
// operator answers and a client's own retry meet in one place. A
// requestState the gateway did not mint, or one used already, gets a
// JSON-RPC error. Closing the response stream cancels the request
// (2026-07-28 basic/patterns/cancellation).
func (s *Server) stateless(w http.ResponseWriter, r *http.Request, body []byte, env *envelope, sseOK bool) {
	msg := headersMismatch(r, body, env, &s.tools)
	if msg == "" && s.needsTools(env) {
		s.learnTools(r, env)
		msg = headersMismatch(r, body, env, &s.tools)
	}
	if msg != "" {
		rpcErrorReply(w, http.StatusBadRequest, env.ID, mcp.HEADER_MISMATCH, msg)
		return
	}
	who := principalOf(r)
	body, sess, err := s.retryOf(body, env, who)
	if err != nil {
		code, prefix := mcp.INVALID_PARAMS, "Invalid params: "
		if errors.Is(err, errTooManyRounds) {
			code, prefix = mcp.INTERNAL_ERROR, ""
		}
		rpcErrorReply(w, codeStatus(code), env.ID, code, prefix+err.Error())
		return
	}
	if len(s.opts.Session.Command) > 0 {
		s.serveShared(w, r, sess, body, env, sseOK)
		return
	}
	if sess == nil {
		if sess, err = s.newSession(r.Context(), oneShot, who, clientOf(r)); err != nil {
			s.refuse(w, err)
			return
		}
	}
	sess.deliver(w, r, body, []envelope{*env}, true, sseOK)
	sess.oneShotCheck()
}

// headersMismatch applies MCP 2026-07-28 streamable HTTP (Server
// Validation) to a stateless request: MCP-Protocol-Version must equal the
// _meta protocol version, Mcp-Method the method, and Mcp-Name the name or
// URI of tools/call, prompts/get and resources/read (decoded from its
// Base64 form); a tools/call of a tool whose x-mcp-header bindings tools
// knows must carry each bound argument in its Mcp-Param-{Name} header,
// well encoded and equal to the body's value, and no such header for an
// argument it lacks (Custom Headers from Tool Parameters). It returns
// what is wrong, or "".
func headersMismatch(r *http.Request, body []byte, env *envelope, tools *toolHeaders) string {
	v := env.Params.Meta.ProtocolVersion
	if hv := r.Header.Get(mcp.HeaderProtocolVersion); hv != v {
		return fmt.Sprintf("Header mismatch: MCP-Protocol-Version header %q does not match the request's _meta protocol version %q", hv, v)
	}
	if !mcp.RequiresStandardHeaders(v) {
		return ""
	}
	if hm := r.Header.Get(mcp.HeaderMethod); hm != env.Method {
		return fmt.Sprintf("Header mismatch: Mcp-Method header %q does not match the body's method %q", hm, env.Method)
	}
	method := mcp.MCPMethod(env.Method)
	if !mcp.MethodRequiresNameHeader(method) {
		return ""
	}
	var p struct {
		Params json.RawMessage `json:"params"`
	}
	json.Unmarshal(body, &p)
	want, _ := mcp.ExtractHeaderName(method, p.Params)
	got, ok := mcp.DecodeHeaderValue(r.Header.Get(mcp.HeaderName))
	if !ok || r.Header.Get(mcp.HeaderName) == "" || got != want {
		return fmt.Sprintf("Header mismatch: Mcp-Name header does not match the body's %s", map[bool]string{true: "uri", false: "name"}[method == mcp.MethodResourcesRead])
	}
	if method != mcp.MethodToolsCall {
		return ""
	}
	tool := tools.get(want)
	if tool == nil {
		return "" // bindings unknown: the headers pass on, for the server to check
	}
	lookup := func(name string) (string, bool) {
		vs := r.Header.Values(name)
		if len(vs) == 0 {
			return "", false
		}
		return vs[0], true
	}
	if err := mcp.ValidateParamHeadersLookup(lookup, tool, p.Params); err != nil {
		return err.Error() + "; send each argument the tool's inputSchema marks with x-mcp-header in its Mcp-Param header (tools/list shows them)"
	}
	return ""
}

// maxToolHeaders bounds the tools whose x-mcp-header bindings a gateway
// keeps: a server that lists more gets the rest checked by itself alone.
const maxToolHeaders = 4096

// toolHeaders are the x-mcp-header bindings of the upstream's tools, by
// tool name, learned from the tools/list results the gateway relays to
// stateless clients: a one-shot session ends with its request, so what
// the gateway checks a later tools/call's Mcp-Param-* headers against
// lives here, for the gateway's lifetime. The zero value is empty.
type toolHeaders struct {
	// mu guards tools and listed.
	mu    sync.Mutex
	tools map[string]*mcp.Tool
	// listed is set once the gateway asked the server for its tool list
	// itself (learnTools) and got an answer.
	listed bool
}

// isListed reports whether the gateway asked the server for its tools.
func (h *toolHeaders) isListed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.listed
}

// setListed records that the gateway asked the server for its tools.
func (h *toolHeaders) setListed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listed = true
}

// learn reads a tools/list response: each tool it lists with
// x-mcp-header bindings is kept (its last listing wins), and a tool it
// lists without any is forgotten. A result it cannot read teaches
// nothing.
func (h *toolHeaders) learn(msg []byte) {
	var resp struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &resp) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range resp.Result.Tools {
		var binds []mcp.ParamHeaderBinding
		if len(t.InputSchema) > 0 {
			binds = mcp.ExtractParamHeaderBindings(&mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema})
		}
		if len(binds) == 0 {
			delete(h.tools, t.Name)
			continue
		}
		if h.tools == nil {
			h.tools = map[string]*mcp.Tool{}
		}
		if _, known := h.tools[t.Name]; known || len(h.tools) < maxToolHeaders {
			h.tools[t.Name] = &mcp.Tool{Name: t.Name, RawInputSchema: bindingSchema(binds)}
		}
	}
}

// bindingSchema is the least inputSchema that carries binds: nested
// properties down to each annotation, and nothing else of the server's
// schema, so what the gateway keeps per tool is the size of its
// bindings.
func bindingSchema(binds []mcp.ParamHeaderBinding) json.RawMessage {
	root := map[string]any{}
	for _, b := range binds {
		node := root
		for i, name := range b.Path {
			props, _ := node["properties"].(map[string]any)
			if props == nil {
				props = map[string]any{}
				node["properties"] = props
			}
			child, _ := props[name].(map[string]any)
			if child == nil {
				child = map[string]any{}
				props[name] = child
			}
			if i == len(b.Path)-1 {
				child["x-mcp-header"] = b.Header
			}
			node = child
		}
	}
	out, _ := json.Marshal(root)
	return out
}

// get returns the tool named name when it has x-mcp-header bindings the
// gateway knows, or nil.
func (h *toolHeaders) get(name string) *mcp.Tool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tools[name]
}

// oneShotCheck ends a one-shot session once no request of it is in
// flight and no input_required it handed out waits for a retry.
func (s *session) oneShotCheck() {
	s.mu.Lock()
	busy := len(s.byRequest) > 0 || len(s.rounds) > 0
	s.mu.Unlock()
	if !busy {
		s.end("")
	}
}

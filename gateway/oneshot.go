package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// stateless serves an MCP 2026-07-28 request that carries its protocol
// version in _meta and comes without a session. It gets a one-shot
// session: a bridge session of its own (its own upstream, AEP session,
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
	if msg := headersMismatch(r, body, env); msg != "" {
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
	if sess == nil {
		if sess, err = s.newSession(r.Context(), oneShot, who); err != nil {
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
// Base64 form). It returns what is wrong, or "".
func headersMismatch(r *http.Request, body []byte, env *envelope) string {
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
	return ""
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

package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// stateless serves an MCP 2026-07-28 request that carries its protocol
// version in _meta and comes without a session. It gets a one-shot
// session: a bridge session of its own (its own upstream, AEP session,
// log and questions) that lives while the request is in flight. When the
// upstream answers input_required (MCP 2026-07-28 multi round-trip
// requests) with a requestState, the session stays until a retry that
// echoes that requestState is answered, and the retry is served by the
// same session, so a question an operator answers and a client's own
// retry meet in one place. Closing the response stream cancels the
// request (2026-07-28 basic/patterns/cancellation).
func (s *Server) stateless(w http.ResponseWriter, r *http.Request, body []byte, env *envelope, sseOK bool) {
	if msg := headersMismatch(r, body, env); msg != "" {
		rpcErrorReply(w, http.StatusBadRequest, env.ID, mcp.HEADER_MISMATCH, msg)
		return
	}
	var sess *session
	if env.Params.RequestState != nil {
		sess = s.stateSession(*env.Params.RequestState)
	}
	if sess == nil {
		var err error
		if sess, err = s.newSession(r.Context(), oneShot, principalOf(r)); err != nil {
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

// noteStateLocked tracks the requestStates of a one-shot session: an
// input_required result's state stays open for the client's retry; a
// retry's final answer closes the state it carried.
func (s *session) noteStateLocked(st *stream, env *envelope) {
	if env.Result == nil {
		return
	}
	if env.Result.ResultType == "input_required" && env.Result.RequestState != "" {
		s.states[env.Result.RequestState] = true
		s.srv.keepState(env.Result.RequestState, s)
	}
	if st.state != "" && env.Result.ResultType != "input_required" {
		delete(s.states, st.state)
		s.srv.dropState(st.state)
	}
}

// oneShotCheck ends a one-shot session once no request of it is in
// flight and no input_required it handed out waits for a retry.
func (s *session) oneShotCheck() {
	s.mu.Lock()
	busy := len(s.byRequest) > 0 || len(s.states) > 0
	s.mu.Unlock()
	if !busy {
		s.end("")
	}
}

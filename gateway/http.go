package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Handler returns the gateway's HTTP handler: streamable HTTP at /mcp
// (POST, GET, DELETE), and the 2024-11-05 HTTP+SSE transport at /sse with
// its POST endpoint /message. Every request passes guard first.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", s.post)
	mux.HandleFunc("GET /mcp", s.get)
	mux.HandleFunc("DELETE /mcp", s.delete)
	mux.HandleFunc("GET /sse", s.legacyOpen)
	mux.HandleFunc("POST /message", s.legacyPost)
	return s.guard(mux)
}

// accepts reports which response types an Accept header admits.
func accepts(r *http.Request) (jsonOK, sseOK bool) {
	h := r.Header.Values("Accept")
	if len(h) == 0 {
		return true, true
	}
	for _, v := range h {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// readBody reads a POST's body within the body limit and deadline, then
// lifts the deadline, since the response may be a long stream. It answers
// the request itself when the body cannot be read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "POST a JSON-RPC message with Content-Type: application/json")
		return nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the message is larger than the gateway's limit of %d bytes", tooLarge.Limit))
		} else {
			httpError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return nil, false
	}
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	return body, true
}

// post takes one POSTed message or batch: it opens a session
// (initialize), serves a stateless 2026-07-28 request, or hands the
// message to the session the Mcp-Session-Id names.
func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	jsonOK, sseOK := accepts(r)
	if !jsonOK && !sseOK {
		httpError(w, http.StatusNotAcceptable, "send Accept: application/json, text/event-stream")
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	msgs, _, ok := split(body)
	if !ok {
		rpcErrorReply(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "Parse error: the body is not a JSON-RPC message or batch")
		return
	}
	envs := make([]envelope, len(msgs))
	for i, m := range msgs {
		if envs[i], ok = parse(m); !ok {
			rpcErrorReply(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message object")
			return
		}
	}
	sid := r.Header.Get(mcp.HeaderSessionID)
	var sess *session
	if sid != "" {
		sess = s.lookup(sid, stateful, principalOf(r))
	}
	switch {
	case sess != nil:
		if !s.versionOK(w, r, sess) {
			return
		}
	case len(envs) == 1 && envs[0].isRequest() && envs[0].Params.Meta.ProtocolVersion != "" &&
		(envs[0].Method != string(mcp.MethodInitialize) || mcp.IsModernProtocol(envs[0].Params.Meta.ProtocolVersion)):
		// MCP 2026-07-28: a request carrying its version in _meta is
		// served without a session; a session id on it is ignored. An
		// initialize that names a modern version is such a request too:
		// the server, which has no initialize in that revision, answers
		// it (404 and -32601, errorStatus).
		s.stateless(w, r, body, &envs[0], sseOK)
		return
	case sid == "" && len(envs) == 1 && envs[0].isRequest() && mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)):
		// A request under a modern MCP-Protocol-Version whose _meta
		// lacks the version: under 2026-07-28 every request carries it
		// (basic/versioning), so this is invalid params, 400, under the
		// request's own id, as a server that validates _meta answers.
		rpcErrorReply(w, http.StatusBadRequest, envs[0].ID, mcp.INVALID_PARAMS,
			fmt.Sprintf("Invalid params: the MCP-Protocol-Version header is %s, so the request's _meta must carry %q with that version; add it, or start a session with initialize under an earlier revision",
				r.Header.Get(mcp.HeaderProtocolVersion), mcp.MetaKeyProtocolVersion))
		return
	case sid != "":
		httpError(w, http.StatusNotFound, "no such MCP session: it ended (DELETE, idle expiry, its server exited) or never existed here; start a new one with initialize")
		return
	case hasInitialize(envs):
		var err error
		if sess, err = s.newSession(r.Context(), stateful, principalOf(r), clientOf(r)); err != nil {
			s.refuse(w, err)
			return
		}
		w.Header().Set(mcp.HeaderSessionID, sess.id)
	default:
		httpError(w, http.StatusBadRequest, "no Mcp-Session-Id header: send initialize first to start a session (or, under MCP 2026-07-28, carry the protocol version in the request's _meta)")
		return
	}
	sess.deliver(w, r, body, envs, jsonOK, sseOK)
}

func hasInitialize(envs []envelope) bool {
	for _, e := range envs {
		if e.Method == string(mcp.MethodInitialize) && e.isRequest() {
			return true
		}
	}
	return false
}

// refuse answers a request for a session the gateway cannot start.
func (s *Server) refuse(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errFull):
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("%v (%d); retry later", err, s.opts.MaxSessions))
	case errors.Is(err, context.Canceled):
		// The client went away while a session made room for it.
	case errors.Is(err, errShutdown):
		httpError(w, http.StatusServiceUnavailable, err.Error())
	default:
		s.log.Error("starting a session", "err", err)
		httpError(w, http.StatusInternalServerError, err.Error())
	}
}

// versionPattern is a protocol revision's shape, YYYY-MM-DD.
var versionPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// versionOK applies MCP basic/transports (Protocol Version Header): a
// request of a session whose MCP-Protocol-Version is malformed or is not
// the version initialize negotiated gets 400. A request without the
// header is served (2025-03-26 clients send none).
func (s *Server) versionOK(w http.ResponseWriter, r *http.Request, sess *session) bool {
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if v == "" {
		return true
	}
	if !versionPattern.MatchString(v) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("MCP-Protocol-Version %q is not a protocol revision (YYYY-MM-DD)", v))
		return false
	}
	sess.mu.Lock()
	negotiated := sess.version
	sess.mu.Unlock()
	if negotiated != "" && v != negotiated {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("MCP-Protocol-Version %q is not the version this session negotiated at initialize (%s)", v, negotiated))
		return false
	}
	return true
}

// deliver hands a POSTed body to the session's proxy and answers: 202 for
// notifications and responses, otherwise the responses to its requests,
// as one JSON body or an event stream (see servePost).
func (sess *session) deliver(w http.ResponseWriter, r *http.Request, body []byte, envs []envelope, jsonOK, sseOK bool) {
	var reqs []*envelope
	for i := range envs {
		if envs[i].isRequest() {
			reqs = append(reqs, &envs[i])
		}
	}
	if len(reqs) == 0 {
		sess.answered(envs)
		if err := sess.submit(r.Context(), body); err != nil {
			if errors.Is(err, errSessionEnded) {
				httpError(w, http.StatusNotFound, "the MCP session ended; start a new one with initialize")
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st, gen, err := sess.open(reqs, !sseOK)
	if err != nil {
		rpcErrorReply(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "Invalid Request: "+err.Error())
		return
	}
	if err := sess.submit(r.Context(), body); err != nil {
		sess.abandon(st)
		if errors.Is(err, errSessionEnded) {
			httpError(w, http.StatusNotFound, "the MCP session ended; start a new one with initialize")
		}
		return
	}
	sess.servePost(w, r, st, gen)
}

// answered forgets where the server requests a POST answers were sent.
func (sess *session) answered(envs []envelope) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	for i := range envs {
		if envs[i].isResponse() {
			delete(sess.sentOn, idKey(envs[i].ID))
		}
	}
}

// open makes the stream that answers a POST's requests and registers
// them, before the proxy can answer.
func (sess *session) open(reqs []*envelope, jsonOnly bool) (*stream, int, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	for _, e := range reqs {
		if sess.byRequest[idKey(e.ID)] != nil {
			return nil, 0, fmt.Errorf("request id %s is already in flight on this session; use a new id", idKey(e.ID))
		}
	}
	st := sess.newStreamLocked(postStream)
	st.jsonOnly = jsonOnly
	for _, e := range reqs {
		k := idKey(e.ID)
		st.awaiting[k] = true
		sess.byRequest[k] = st
		if tok := e.progressToken(); tok != nil {
			sess.byToken[idKey(tok)] = st
		}
		if e.Method == string(mcp.MethodInitialize) {
			sess.initID = k
		}
		if sess.kind == oneShot {
			st.request = requestBinding(e.Method, e.subject())
			st.modern = mcp.IsModernProtocol(e.Params.Meta.ProtocolVersion)
			st.listsTools = e.Method == string(mcp.MethodToolsList)
		}
	}
	st.gen++
	st.attached = true
	return st, st.gen, nil
}

// abandon forgets a stream whose body never reached the proxy.
func (sess *session) abandon(st *stream) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	for k := range st.awaiting {
		delete(sess.byRequest, k)
	}
	for tk, ts := range sess.byToken {
		if ts == st {
			delete(sess.byToken, tk)
		}
	}
	delete(sess.streams, st.id)
}

// get opens the session's standing stream (MCP basic/transports,
// Listening for Messages from the Server), or with Last-Event-ID resumes
// the stream that event was on, replaying what followed it.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if _, sseOK := accepts(r); !sseOK {
		httpError(w, http.StatusNotAcceptable, "send Accept: text/event-stream")
		return
	}
	sid := r.Header.Get(mcp.HeaderSessionID)
	if sid == "" {
		// MCP 2025-11-25 basic/transports (Session Management): a request
		// without the session id a server requires gets 400.
		httpError(w, http.StatusBadRequest, "GET /mcp serves the stream of an MCP session: send its Mcp-Session-Id (MCP 2026-07-28 requests need no GET stream)")
		return
	}
	sess := s.lookup(sid, stateful, principalOf(r))
	if sess == nil {
		httpError(w, http.StatusNotFound, "no such MCP session: it ended or never existed here; start a new one with initialize")
		return
	}
	if !s.versionOK(w, r, sess) {
		return
	}
	st, gen, cursor, err := sess.attach(r.Header.Get(mcp.HeaderLastEventID))
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	sess.pump(w, r, st, gen, cursor)
}

// attach attaches a GET connection to the standing stream, or to the
// stream Last-Event-ID names, taking it over from a connection that may
// have dropped; cursor is the last event the client has.
func (sess *session) attach(lastID string) (*stream, int, int, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.touchLocked()
	var st *stream
	cursor := 0
	if lastID == "" {
		st = sess.fallbackLocked()
		cursor = st.undeliveredCursor()
	} else {
		sid, seq, ok := parseEventID(lastID)
		if ok {
			st = sess.streams[sid]
		}
		if st == nil {
			return nil, 0, 0, fmt.Errorf("Last-Event-ID %q names no stream of this session that is still kept (the last %d answered requests are); open the stream without Last-Event-ID", lastID, sess.srv.opts.ResumeStreams)
		}
		if _, complete := st.after(seq); !complete {
			return nil, 0, 0, fmt.Errorf("the events after %q are no longer kept (each stream keeps its last %d); open the stream without Last-Event-ID", lastID, sess.srv.opts.ResumeEvents)
		}
		cursor = seq
		if st.mode == modeUndecided {
			st.mode = modeSSE
		}
	}
	st.unhook() // a connection it takes over stops; nothing waits behind this one yet
	st.attached = true
	return st, st.gen, cursor, nil
}

// delete ends the session the Mcp-Session-Id names, and its upstream
// (MCP basic/transports, Session Management).
func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(mcp.HeaderSessionID)
	if sid == "" {
		httpError(w, http.StatusBadRequest, "DELETE /mcp ends an MCP session: send its Mcp-Session-Id")
		return
	}
	sess := s.lookup(sid, stateful, principalOf(r))
	if sess == nil {
		httpError(w, http.StatusNotFound, "no such MCP session: it ended or never existed here")
		return
	}
	if !s.versionOK(w, r, sess) {
		return
	}
	sess.end("the client ended the session (DELETE)")
	select {
	case <-sess.done:
		w.WriteHeader(http.StatusNoContent)
	case <-r.Context().Done():
	}
}

// writeJSON answers a POST with its responses as one JSON body: the
// response, or for a batch the array of them, with HTTP status 200
// unless errorStatus says otherwise for a modern request.
func writeJSON(w http.ResponseWriter, st *stream, evs []*event) error {
	status := http.StatusOK
	if st.modern && len(evs) == 1 {
		status = errorStatus(evs[0].data)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if len(evs) == 1 {
		_, err := w.Write(evs[0].data)
		return err
	}
	arr := make([]json.RawMessage, len(evs))
	for i, ev := range evs {
		arr[i] = ev.data
	}
	b, _ := json.Marshal(arr)
	_, err := w.Write(b)
	return err
}

// errorStatus is the HTTP status of an MCP 2026-07-28 response answered
// as one JSON body (basic/transports/streamable-http, Protocol Version
// Header and Server Validation; basic/versioning): 404 for a method the
// server does not implement (-32601); 400 for invalid params (-32602,
// which covers invalid _meta), HeaderMismatch (-32020),
// MissingRequiredClientCapability (-32021) and UnsupportedProtocolVersion
// (-32022); 200 for any other response, an error included, since the
// request itself was served.
func errorStatus(msg []byte) int {
	var resp struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &resp) != nil || resp.Error == nil {
		return http.StatusOK
	}
	return codeStatus(resp.Error.Code)
}

// codeStatus is the HTTP status of a modern JSON-RPC error response with
// code (errorStatus).
func codeStatus(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.INVALID_PARAMS, mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// legacyOpen serves GET /sse, the 2024-11-05 HTTP+SSE transport: a new
// session whose one event stream opens with an endpoint event naming the
// URL its client POSTs to, then carries every server message. The session
// ends with the stream (that transport has no resumption).
//
// Without a client token (--mcp-auth none), the GET must name
// text/event-stream in its Accept: a browser's page load, which accepts
// anything, opens nothing.
func (s *Server) legacyOpen(w http.ResponseWriter, r *http.Request) {
	if _, sseOK := accepts(r); !sseOK || (!s.auth && !asksForEventStream(r)) {
		httpError(w, http.StatusNotAcceptable, "GET /sse opens an HTTP+SSE session for a client that asks for it: send Accept: text/event-stream")
		return
	}
	sess, err := s.newSession(r.Context(), legacySSE, principalOf(r), clientOf(r))
	if err != nil {
		s.refuse(w, err)
		return
	}
	st, gen, cursor, _ := sess.attach("")
	sess.pump(w, r, st, gen, cursor)
}

// writeEndpoint writes the endpoint event of an HTTP+SSE stream: the
// relative URL of the session's POST endpoint.
func (sess *session) writeEndpoint(w http.ResponseWriter, rc *http.ResponseController) bool {
	rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	q := url.Values{"sessionId": {sess.id}}
	if _, err := fmt.Fprintf(w, "event: endpoint\ndata: /message?%s\n\n", q.Encode()); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// legacyPost serves POST /message?sessionId=…: a client message of an
// HTTP+SSE session, answered 202; responses travel on the session's
// event stream.
func (s *Server) legacyPost(w http.ResponseWriter, r *http.Request) {
	sess := s.lookup(r.URL.Query().Get("sessionId"), legacySSE, principalOf(r))
	if sess == nil {
		httpError(w, http.StatusNotFound, "no such HTTP+SSE session: its event stream closed or it never existed here; open GET /sse again")
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if _, _, ok := split(body); !ok {
		httpError(w, http.StatusBadRequest, "Parse error: the body is not a JSON-RPC message or batch")
		return
	}
	if err := sess.submit(r.Context(), body); err != nil {
		httpError(w, http.StatusNotFound, "the HTTP+SSE session ended; open GET /sse again")
		return
	}
	w.WriteHeader(http.StatusAccepted)
	w.Write([]byte("Accepted"))
}

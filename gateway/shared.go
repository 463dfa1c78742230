package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// Stateless requests to a spawned server (serve -- COMMAND).
//
// MCP 2026-07-28 has no sessions: a stateless HTTP server serves every
// request with one process, so a change one request makes (a tool added,
// a resource updated) reaches the subscriptions/listen streams another
// opened. The gateway does the same with a spawned server: the stateless
// requests of one principal (a named client, the token's holders, or
// anonymous; see principal) share one long-lived bridge session, its
// shared session, with one server process, which stdio serves as MCP
// 2026-07-28 wants (basic/transports/stdio: one channel, requests
// correlated by id, listen notifications by subscriptionId).
//
//   - Each request goes upstream under an id the gateway makes ("aepgw-"
//     and a number), and its progress token too, so the ids and tokens
//     different requests chose never meet; the response, its progress,
//     and the notifications the server tags with a listen request's id
//     (io.modelcontextprotocol/subscriptionId) reach that request's HTTP
//     response stream alone, under the client's own id and token.
//   - A server message that relates to no request in flight (stdio has
//     no other relation) reaches nobody; a request of the server, which
//     MCP 2026-07-28 forbids, is answered with an error so it does not
//     hang; both are logged.
//   - Closing a request's response stream cancels that request alone
//     (notifications/cancelled upstream, as over stdio); so does not
//     reading it past StreamBuffered.
//   - At most maxSharedInflight requests of a principal are in flight at
//     once; past it, 503 with Retry-After.
//   - When the server exits, every request in flight gets a JSON-RPC
//     error naming its exit status, the shared session ends, and the
//     next request starts a new one with a new process (stdio,
//     Unexpected Termination).
//   - A shared session is a session of the table: it counts towards
//     MaxSessions, ends when idle for SessionIdle (a listen stream
//     keeps it busy), can be ended to make room when idle, and ends
//     when its named client is revoked.
//   - An input_required result's requestState is wrapped as for a
//     one-shot session (requeststate.go); the retry reaches the shared
//     session that handed it out.
//
// Different principals never share a process: nothing one named client
// does on its server, and nothing its server says, reaches another. A
// remote server (--url) is shared already; there each stateless request
// keeps a one-shot session (oneshot.go), a connection of its own to it.

// maxSharedInflight bounds the requests of one shared session in flight
// (subscriptions/listen streams included); under elicit's own bound of
// tracked requests, which would otherwise fail the oldest.
const maxSharedInflight = 256

// maxCtl bounds the messages the gateway queues for a shared session's
// proxy; past it a server that sends requests while not reading its
// input gets no answer for the rest, which the log says.
const maxCtl = 1024

// errSharedBusy refuses a request past maxSharedInflight.
var errSharedBusy = errors.New("this client has as many requests in flight on the gateway's server as it serves at once; retry when some are answered")

// sharedSlot is the shared session of one principal, or its start.
type sharedSlot struct {
	ready chan struct{} // closed once sess or err is set
	sess  *session
	err   error
}

// sharedFor returns who's live shared session, starting one (and with
// it a server process) when there is none.
func (s *Server) sharedFor(ctx context.Context, who principal, client *identity.Client) (*session, error) {
	for range 4 {
		s.mu.Lock()
		slot := s.shared[who]
		if slot == nil {
			slot = &sharedSlot{ready: make(chan struct{})}
			s.shared[who] = slot
			s.mu.Unlock()
			sess, err := s.newSession(ctx, shared, who, client)
			// The session's runSession may already be ending it and
			// reading slot.sess under s.mu (forgetSharedLocked), so
			// the slot is filled under s.mu too.
			s.mu.Lock()
			slot.sess, slot.err = sess, err
			if err != nil && s.shared[who] == slot {
				delete(s.shared, who)
			}
			s.mu.Unlock()
			close(slot.ready)
			return sess, err
		}
		s.mu.Unlock()
		select {
		case <-slot.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if slot.err == nil && slot.sess.ctx.Err() == nil {
			return slot.sess, nil
		}
		s.mu.Lock()
		if s.shared[who] == slot {
			delete(s.shared, who) // ended, or failed to start: start anew
		}
		s.mu.Unlock()
	}
	return nil, errSharedStart
}

// errSharedStart says that a principal's shared session kept ending as
// it started.
var errSharedStart = errors.New("the server for this client ended each time it was started; run the command alone to see its error")

// forgetShared drops sess from the shared sessions, once it ended.
func (s *Server) forgetSharedLocked(sess *session) {
	if slot := s.shared[sess.owner]; slot != nil && slot.sess == sess {
		delete(s.shared, sess.owner)
	}
}

// serveShared serves a stateless request (its body as the server gets
// it) on sess, or when that is nil or ends before the request reached
// it, on who's shared session.
func (s *Server) serveShared(w http.ResponseWriter, r *http.Request, sess *session, body []byte, env *envelope, sseOK bool) {
	who := principalOf(r)
	for range 3 {
		if sess == nil {
			var err error
			if sess, err = s.sharedFor(r.Context(), who, clientOf(r)); err != nil {
				s.refuse(w, err)
				return
			}
		}
		out, st, gen, err := sess.openShared(body, env, !sseOK)
		switch {
		case errors.Is(err, errSessionEnded):
			sess = nil
			continue
		case errors.Is(err, errSharedBusy):
			w.Header().Set("Retry-After", "1")
			httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("%v (%d)", err, s.maxInflight))
			return
		case err != nil:
			rpcErrorReply(w, http.StatusBadRequest, env.ID, mcp.INVALID_REQUEST, "Invalid Request: "+err.Error())
			return
		}
		if err := sess.submit(r.Context(), out); err != nil {
			sess.abandon(st)
			if errors.Is(err, errSessionEnded) {
				sess = nil
				continue
			}
			return // the client went away
		}
		sess.servePost(w, r, st, gen)
		return
	}
	httpError(w, http.StatusServiceUnavailable, "the gateway's server for this client ended while the request was on its way; retry")
}

// openShared gives a request of a shared session its upstream id (and
// progress token), registers its stream and returns the body the proxy
// gets; errSessionEnded when the session is ending.
func (sess *session) openShared(body []byte, env *envelope, jsonOnly bool) ([]byte, *stream, int, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ctx.Err() != nil || sess.closed {
		return nil, nil, 0, errSessionEnded
	}
	if up := sess.b.Upstream(); strings.HasPrefix(up, "exited") || strings.HasPrefix(up, "failed") {
		// The server is gone and the session ending: the bridge records
		// that before it fails the requests in flight, so a client that
		// saw that error and retries reaches a new server.
		if sess.reason == "" {
			sess.reason = "the server " + up
		}
		sess.cancel()
		return nil, nil, 0, errSessionEnded
	}
	if len(sess.byRequest) >= sess.srv.maxInflight {
		return nil, nil, 0, errSharedBusy
	}
	sess.seq++
	n := strconv.FormatUint(sess.seq, 10)
	upID := json.RawMessage(`"aepgw-` + n + `"`)
	out, _, err := setPath(body, upID, "id")
	if err != nil {
		return nil, nil, 0, fmt.Errorf("the request's %w", err)
	}
	var upToken json.RawMessage
	tok := env.progressToken()
	if tok != nil {
		upToken = json.RawMessage(`"aepgw-t` + n + `"`)
		var found bool
		if out, found, err = setPath(out, upToken, "params", "_meta", "progressToken"); err != nil || !found {
			if err == nil {
				err = errors.New(`progressToken must be written once, in params._meta, spelled "progressToken"`)
			}
			return nil, nil, 0, fmt.Errorf("the request's %w", err)
		}
	}
	st := sess.newStreamLocked(postStream)
	st.jsonOnly = jsonOnly
	k := idKey(upID)
	st.awaiting[k] = true
	sess.byRequest[k] = st
	if upToken != nil {
		sess.byToken[idKey(upToken)] = st
	}
	st.clientID, st.clientToken, st.upID, st.upToken = env.ID, tok, upID, upToken
	st.request = requestBinding(env.Method, env.subject())
	st.modern = mcp.IsModernProtocol(env.Params.Meta.ProtocolVersion)
	st.listsTools = env.Method == string(mcp.MethodToolsList)
	st.listens = env.Method == methodSubscriptionsListen
	sess.used = true
	sess.touchLocked()
	st.gen++
	st.attached = true
	return out, st, st.gen, nil
}

// methodSubscriptionsListen opens a stream of change notifications (MCP
// 2026-07-28 basic/patterns/subscriptions).
const methodSubscriptionsListen = "subscriptions/listen"

// metaSubscriptionID is the _meta key that tags a listen stream's
// messages with the id of the request that opened it.
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// restoreResponseLocked puts the client's id back on the response to a
// shared session's request (and on a listen stream's closing result, its
// subscriptionId). A response the gateway cannot rewrite unambiguously
// is replaced with an error saying so.
func (sess *session) restoreResponseLocked(st *stream, m json.RawMessage, env *envelope) (json.RawMessage, *envelope) {
	e := *env
	e.ID = st.clientID
	out, _, err := setPath(m, st.clientID, "id")
	if err == nil && st.listens {
		out, _, err = replacePath(out, []string{"result", "_meta", metaSubscriptionID}, sess.sameAs(st.upID, st.clientID))
	}
	if err != nil {
		sess.log.Warn("refusing a server response the gateway cannot rewrite", "err", err)
		return errorMessage(st.clientID, mcp.INTERNAL_ERROR, "the server's response was refused: "+err.Error()), &e
	}
	return out, &e
}

// sameAs returns a rewrite that gives want for a value equal to up, and
// refuses any other: a server's tag that names another request.
func (sess *session) sameAs(up, want json.RawMessage) func(json.RawMessage) (json.RawMessage, error) {
	return func(v json.RawMessage) (json.RawMessage, error) {
		if idKey(v) != idKey(up) {
			return nil, fmt.Errorf("%s names another request than the one it answers", metaSubscriptionID)
		}
		return want, nil
	}
}

// routeSharedLocked routes a server request or notification of a
// shared session: progress by its token, a listen stream's notification
// by its subscriptionId, each to its request's stream under the
// client's own token or id. What relates to no open request reaches no
// client; a server request among those is answered with an error.
func (sess *session) routeSharedLocked(m json.RawMessage, env *envelope) {
	var st *stream
	var path []string
	var up json.RawMessage
	switch {
	case env.Method == string(mcp.MethodNotificationProgress) && len(env.Params.ProgressToken) > 0:
		st = sess.byToken[idKey(env.Params.ProgressToken)]
		if st != nil {
			path, up = []string{"params", "progressToken"}, st.upToken
		}
	case len(env.Params.Meta.SubscriptionID) > 0:
		st = sess.byRequest[idKey(env.Params.Meta.SubscriptionID)]
		if st != nil && !st.listens {
			st = nil
		}
		if st != nil {
			path, up = []string{"params", "_meta", metaSubscriptionID}, st.upID
		}
	}
	switch {
	case st != nil && !st.open():
		// Its request's client takes JSON alone, or left.
		sess.log.Debug("a server message for a request whose client takes no event stream was not sent", "method", env.Method)
		return
	case st == nil && env.isRequest():
		sess.refuseServerRequestLocked(env)
		return
	case st == nil:
		sess.log.Warn("a server notification relates to no request in flight; no client gets it", "method", env.Method)
		return
	}
	want := st.clientToken
	if path[len(path)-1] == metaSubscriptionID {
		want = st.clientID
	}
	out, _, err := replacePath(m, path, sess.sameAs(up, want))
	if err != nil {
		sess.log.Warn("dropped a server notification the gateway cannot rewrite", "method", env.Method, "err", err)
		return
	}
	sess.queueLocked(st, out, false)
}

// refuseServerRequestLocked answers a request the server of a shared
// session sent: under MCP 2026-07-28 a server asks for input with
// input_required, never with a request of its own, and no client
// stream could carry it.
func (sess *session) refuseServerRequestLocked(env *envelope) {
	sess.log.Warn("refused a server request: a stateless client cannot receive one", "method", env.Method)
	sess.queueCtlLocked(errorMessage(env.ID, mcp.METHOD_NOT_FOUND,
		"the gateway's stateless MCP 2026-07-28 clients take no server requests; ask with an input_required result (basic/patterns/mrtr)"))
}

// queueCtlLocked queues a message of the gateway's own for the proxy.
func (sess *session) queueCtlLocked(m []byte) {
	if len(sess.ctl) >= maxCtl {
		sess.log.Warn("dropped a message for the server: it does not read its input", "queued", len(sess.ctl))
		return
	}
	sess.ctl = append(sess.ctl, m)
	select {
	case sess.ctlReady <- struct{}{}:
	default:
	}
}

// cancelSharedLocked ends a shared session's request whose client is
// gone or does not read: it is forgotten, so nothing more is routed to
// it, and the server is told (notifications/cancelled, as over stdio).
func (sess *session) cancelSharedLocked(st *stream, reason string) {
	for k := range st.awaiting {
		delete(sess.byRequest, k)
		n, _ := json.Marshal(struct {
			JSONRPC string `json:"jsonrpc"`
			Method  string `json:"method"`
			Params  struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			} `json:"params"`
		}{JSONRPC: mcp.JSONRPC_VERSION, Method: string(mcp.MethodNotificationCancelled), Params: struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}{st.upID, reason}})
		sess.queueCtlLocked(n)
	}
	clear(st.awaiting)
	st.finished = true
	st.wake()
	sess.orphanLocked(st)
	sess.forgetStreamLocked(st)
}

// forgetStreamLocked forgets a shared session's stream once it is done
// with: it cannot be resumed.
func (sess *session) forgetStreamLocked(st *stream) {
	if !st.finished {
		return
	}
	if st.upToken != nil && sess.byToken[idKey(st.upToken)] == st {
		delete(sess.byToken, idKey(st.upToken))
	}
	if _, ok := sess.streams[st.id]; ok {
		sess.retained -= retainedBytes(st)
		delete(sess.streams, st.id)
	}
}

// maxToolPages bounds the pages of tools/list learnTools reads.
const maxToolPages = 32

// needsTools reports whether the gateway must learn the spawned
// server's tools before it checks env, a stateless request: a
// tools/call under a revision that mirrors arguments in Mcp-Param
// headers, when the gateway never asked for the tool list. MCP
// 2026-07-28 streamable HTTP (Server Behavior for Custom Headers): the
// server that processes the body validates those headers, and a stdio
// server sees no headers, so under serve -- COMMAND the gateway is that
// server. A remote server checks its own.
func (s *Server) needsTools(env *envelope) bool {
	return len(s.opts.Session.Command) > 0 && env.Method == string(mcp.MethodToolsCall) &&
		mcp.RequiresStandardHeaders(env.Params.Meta.ProtocolVersion) && !s.tools.isListed()
}

// learnTools asks the server of r's principal for its tool list, every
// page of it, once in the gateway's life (and again only when no answer
// came): the bindings it lists are kept (toolHeaders.learn, as for a
// relayed tools/list), and a tool it lists without any passes
// unchecked. A server that answers with an error has no list to learn.
// When no answer comes, the request passes on unchecked, as before.
func (s *Server) learnTools(r *http.Request, env *envelope) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	if s.tools.isListed() {
		return // another request learned them meanwhile
	}
	sess, err := s.sharedFor(r.Context(), principalOf(r), clientOf(r))
	if err != nil {
		return // the request itself will say why
	}
	meta := map[string]any{mcp.MetaKeyProtocolVersion: env.Params.Meta.ProtocolVersion, mcp.MetaKeyClientCapabilities: map[string]any{}}
	cursor := ""
	for range maxToolPages {
		params := map[string]any{"_meta": meta}
		if cursor != "" {
			params["cursor"] = cursor
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": "aepgw-tools", "method": mcp.MethodToolsList, "params": params})
		resp, err := sess.ask(r.Context(), body)
		if err != nil {
			s.log.Info("the server's tool list could not be read; Mcp-Param headers pass unchecked", "err", err)
			return
		}
		var page struct {
			Result *struct {
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
			Error *rpcErrorBody `json:"error"`
		}
		json.Unmarshal(resp, &page)
		if page.Error != nil && page.Error.Code == codeSessionEnded {
			s.log.Info("the server's tool list could not be read; Mcp-Param headers pass unchecked", "err", page.Error.Message)
			return // the server is gone: the next request asks again
		}
		if page.Result == nil || page.Result.NextCursor == "" {
			break // the last page, or an error: nothing more to learn
		}
		cursor = page.Result.NextCursor
	}
	s.tools.setListed()
}

// ask sends a request of the gateway's own on a shared session and
// returns the server's response, which no client gets (a tools/list
// response teaches the gateway's toolHeaders on its way, respondLocked).
func (sess *session) ask(ctx context.Context, body []byte) ([]byte, error) {
	env, _ := parse(body)
	out, st, _, err := sess.openShared(body, &env, true)
	if err != nil {
		return nil, err
	}
	if err := sess.submit(ctx, out); err != nil {
		sess.abandon(st)
		return nil, err
	}
	for {
		sess.mu.Lock()
		if st.finished {
			var resp []byte
			for _, ev := range st.events {
				if ev.response {
					resp = ev.data
				}
			}
			st.attached = false
			sess.forgetStreamLocked(st)
			sess.mu.Unlock()
			if resp == nil {
				return nil, errSessionEnded
			}
			return resp, nil
		}
		sess.mu.Unlock()
		select {
		case <-st.notify:
		case <-ctx.Done():
			sess.mu.Lock()
			sess.cancelSharedLocked(st, "the request that waited for the tool list went away")
			sess.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

package endpoint

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/hostguard"
)

// DefaultBodyTimeout bounds reading a request's body when Options.BodyTimeout
// is zero.
const DefaultBodyTimeout = 60 * time.Second

// guard is the outer layer of every request. It refuses, with 403 and
// whatever the token:
//   - a Host that names neither the address the request arrived on,
//     localhost, a loopback IP (each with that port), nor an --allow-host
//     (the DNS-rebinding defence of a loopback server);
//   - an Origin (sent by browsers on WebSocket upgrades, POSTs and
//     cross-origin reads) that is neither the endpoint's own origin nor an
//     --allow-origin.
//
// Allowed foreign origins get CORS headers and preflight answers. Every
// request gets a read deadline for its body: only a handler that has
// authenticated a real stream lifts it (see streamReady), so a request that
// merely names a stream's path, without the token, with a body or without
// the upgrade, ends with the deadline like any other.
func (e *Endpoint) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.policy.HostAllowed(r) {
			writeError(w, http.StatusForbidden, "forbidden-host", fmt.Sprintf(
				"this endpoint serves only its listen address, localhost and loopback IPs on its port, not Host %q; start the bridge with --allow-host to serve another name", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			cross, ok := e.policy.OriginAllowed(r, origin)
			if !ok {
				writeError(w, http.StatusForbidden, "forbidden-origin", fmt.Sprintf(
					"browser pages from %q may not use this endpoint; open the inbox the bridge serves, or start the bridge with --allow-origin %s", origin, origin))
				return
			}
			if cross && hostguard.CORS(w, r, origin, "GET, POST", "Authorization, Content-Type, AEP-Version, Last-Event-ID", nil) {
				return
			}
		}
		// A stalled body ends at the deadline. The error is ignored for
		// writers without deadlines (tests' recorders).
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(e.opts.BodyTimeout))
		next.ServeHTTP(w, r)
	})
}

// streamReady checks that r, already authenticated (by the token, or at
// /join by the proof to come), may open a long-lived stream, and moves its
// read deadline from the body's to the stream's: until, the zero time for
// none (an SSE stream), or the end of a WebSocket handshake. A stream
// request has no body, and a WebSocket one is a real upgrade (RFC 6455
// §4.1); anything else is answered 400 and keeps the body deadline, so it
// cannot hold the connection open.
func streamReady(w http.ResponseWriter, r *http.Request, websocketUpgrade bool, until time.Time) bool {
	switch {
	case r.ContentLength != 0:
		writeError(w, http.StatusBadRequest, "invalid-request", "a stream request has no body; send GET without one")
		return false
	case websocketUpgrade && !websocket.IsWebSocketUpgrade(r):
		writeError(w, http.StatusBadRequest, "invalid-request", "this path is a WebSocket: send a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)")
		return false
	}
	http.NewResponseController(w).SetReadDeadline(until)
	return true
}

// handshakeWait bounds a WebSocket handshake, from the request to the end
// of the token proof at /join or to hello at /socket.
const handshakeWait = 10 * time.Second

// resumeCapability is set in hello to the resume secret (package
// authority: what an emitter proves it is the same one with).
const resumeCapability = aep.ResumeSecretCapability

package endpoint

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/hostguard"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
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
// Allowed foreign origins get CORS headers and preflight answers. Requests
// that are not long-lived streams get a read deadline for their body.
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
		if !isStream(r) {
			// A stalled body ends at the deadline. The error is ignored for
			// writers without deadlines (tests' recorders).
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(e.opts.BodyTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

// isStream reports whether r opens a long-lived stream (WebSocket or SSE),
// which no body deadline may cut.
func isStream(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	switch r.URL.Path {
	case "/socket", "/stream", proof.Path:
		return true
	}
	return false
}

package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/hostguard"
)

// corsHeaders are the response headers a browser page of an allowed
// origin may read.
var corsHeaders = []string{mcp.HeaderSessionID, mcp.HeaderProtocolVersion, "WWW-Authenticate", "Retry-After"}

// guard is the outer layer of every request, in order:
//   - Host must name the listen address, localhost or a loopback IP (each
//     with its port), or an --allow-host: the DNS-rebinding defence;
//   - Origin, when present, must be the gateway's own or an
//     --allow-origin (MCP basic/transports: 403 for an invalid Origin);
//   - what only a browser's page load sends (fetch metadata): a
//     navigation, or a request of another site's page that carries no
//     allowed Origin (an iframe, an img or script tag);
//   - the bearer token, unless authentication is off;
//   - a body bounded in size and in time.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.policy.HostAllowed(r) {
			httpError(w, http.StatusForbidden, fmt.Sprintf("this MCP endpoint serves only its listen address, localhost and loopback IPs on its port, not Host %q; start the gateway with --allow-host to serve another name", r.Host))
			return
		}
		origin := r.Header.Get("Origin")
		if origin != "" {
			cross, ok := s.policy.OriginAllowed(r, origin)
			if !ok {
				httpError(w, http.StatusForbidden, fmt.Sprintf("browser pages from %q may not use this MCP endpoint; start the gateway with --allow-origin %s to allow them", origin, origin))
				return
			}
			if cross && hostguard.CORS(w, r, origin, "GET, POST, DELETE", r.Header.Get("Access-Control-Request-Headers"), corsHeaders) {
				return
			}
		}
		if msg := pageLoad(r, origin != ""); msg != "" {
			httpError(w, http.StatusForbidden, msg)
			return
		}
		who, ok := s.authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aep-mcp-bridge"`)
			httpError(w, http.StatusUnauthorized, "a bearer token is required: send Authorization: Bearer <token>, the gateway's --mcp-token (AEP_MCP_TOKEN, or the mcp-token file in its state folder)")
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, who))
		if r.Body != nil && r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
			// A stalled body ends at the deadline; the handler lifts it
			// once the body is read, since the response may be a stream.
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

// pageLoad says why a request is one only a browser's page load sends,
// or returns "". MCP clients never navigate, and a browser page's fetch
// or EventSource carries its Origin (checked above); what else a browser
// sends, with the fetch metadata of W3C Fetch Metadata Request Headers,
// is a navigation (Sec-Fetch-Mode: navigate: an iframe, a link, a form,
// the address bar) or a no-cors request of a page (an img, script or
// link tag: Sec-Fetch-Site cross-site or same-site, with no Origin).
// Without a client token nothing else would stop such a request from
// opening a session and starting a server, so neither passes, token or
// not. Browsers without fetch metadata are met by legacyOpen's Accept
// rule instead.
func pageLoad(r *http.Request, hasOrigin bool) string {
	switch mode := strings.ToLower(r.Header.Get("Sec-Fetch-Mode")); mode {
	case "navigate", "nested-navigate":
		return fmt.Sprintf("a browser navigation (Sec-Fetch-Mode: %s) may not use this MCP endpoint: MCP clients send requests, they do not load it as a page", mode)
	}
	if hasOrigin {
		return ""
	}
	switch site := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); site {
	case "cross-site", "same-site":
		return fmt.Sprintf("a request of another site's page (Sec-Fetch-Site: %s) with no Origin may not use this MCP endpoint; a page of an --allow-origin may, with fetch or EventSource", site)
	}
	return ""
}

// asksForEventStream reports whether a request's Accept names
// text/event-stream itself, as every HTTP+SSE client's does, rather than
// through a wildcard, as a browser's page load does.
func asksForEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// principal names who a request acts for. A session, and each
// input_required round it hands out, belongs to the principal that
// opened it, and only that principal reaches it. Until the gateway has a
// credential per client, every holder of the client token is one
// principal (named by a digest of the token, so the gateways of a fleet
// that share it agree on it), and without a token (--mcp-auth none)
// every local process is the one principal anonymous.
type principal string

// anonymous is the principal of every request under --mcp-auth none.
const anonymous principal = "anonymous"

// tokenHolder is the principal of the holders of token: a digest, never
// the token, so it may be logged.
func tokenHolder(token string) principal {
	sum := sha256.Sum256([]byte("aep-mcp-bridge gateway client\x00" + token))
	return principal("token:" + hex.EncodeToString(sum[:8]))
}

// principalKey is the request context key of the request's principal.
type principalKey struct{}

// principalOf returns the principal guard authenticated r as.
func principalOf(r *http.Request) principal {
	who, _ := r.Context().Value(principalKey{}).(principal)
	return who
}

// authenticate returns the principal r acts for, and false when it does
// not carry the client token the gateway requires.
func (s *Server) authenticate(r *http.Request) (principal, bool) {
	if !s.auth {
		return anonymous, true
	}
	if !s.authorized(r) {
		return "", false
	}
	return s.holder, true
}

// authorized compares the request's bearer token with the gateway's in
// constant time (both hashed, so their lengths do not show either).
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], s.token[:]) == 1
}

// httpError answers with status and a JSON-RPC error without an id, as
// MCP basic/transports allows for a refused HTTP request.
func httpError(w http.ResponseWriter, status int, msg string) {
	code := mcp.INVALID_REQUEST
	if status >= 500 {
		code = mcp.INTERNAL_ERROR
	}
	rpcReply(w, status, errorMessage(nil, code, msg))
}

// rpcReply answers with status and one JSON-RPC message.
func rpcReply(w http.ResponseWriter, status int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(msg)
}

// rpcErrorReply answers with status and a JSON-RPC error for id.
func rpcErrorReply(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	rpcReply(w, status, errorMessage(id, code, msg))
}

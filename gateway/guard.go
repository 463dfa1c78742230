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

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
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
//   - the bearer token, unless authentication is off, or a named
//     client's credential (clients.go);
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
		who, client, why := s.authenticate(r)
		if why != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aep-mcp-bridge"`)
			httpError(w, http.StatusUnauthorized, why)
			return
		}
		if client != nil {
			if why := s.outOfScope(client); why != "" {
				s.refused("out-of-scope", client.Name)
				httpError(w, http.StatusForbidden, why)
				return
			}
		}
		ctx := context.WithValue(r.Context(), principalKey{}, who)
		if client != nil {
			ctx = context.WithValue(ctx, clientKey{}, client)
		}
		r = r.WithContext(ctx)
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
// opened it, and only that principal reaches it. A named client is a
// principal of its own (clientPrincipal); every holder of the shared
// client token is one principal (named by a digest of the token, so the
// gateways of a fleet that share it agree on it); without a token
// (--mcp-auth none) every local process without a client credential is
// the one principal anonymous.
type principal string

// anonymous is the principal of every request under --mcp-auth none.
const anonymous principal = "anonymous"

// tokenHolder is the principal of the holders of token: a digest, never
// the token, so it may be logged.
func tokenHolder(token string) principal {
	sum := sha256.Sum256([]byte("aep-mcp-bridge gateway client\x00" + token))
	return principal("token:" + hex.EncodeToString(sum[:8]))
}

// principalKey and clientKey are the request context keys of the
// request's principal, and of its named client's record.
type (
	principalKey struct{}
	clientKey    struct{}
)

// principalOf returns the principal guard authenticated r as.
func principalOf(r *http.Request) principal {
	who, _ := r.Context().Value(principalKey{}).(principal)
	return who
}

// clientOf returns the named client guard authenticated r as, or nil.
func clientOf(r *http.Request) *identity.Client {
	c, _ := r.Context().Value(clientKey{}).(*identity.Client)
	return c
}

// authenticate returns the principal r acts for, with its named client's
// record when it presented a client credential, or why it is refused.
func (s *Server) authenticate(r *http.Request) (principal, *identity.Client, string) {
	tok, ok := bearerOf(r)
	if ok && identity.LooksLikeCredential(tok) {
		c, why := s.authenticateClient(tok)
		if why != "" {
			return "", nil, why
		}
		return clientPrincipal(c), &c, ""
	}
	switch {
	case !s.auth:
		return anonymous, nil, ""
	case !ok || !s.tokenOK(tok):
		return "", nil, "a bearer token is required: send Authorization: Bearer <token>, the gateway's --mcp-token (AEP_MCP_TOKEN, or the mcp-token file in its state folder), or a client credential (aep-mcp-bridge clients add NAME)"
	}
	return s.holder, nil, ""
}

// tokenOK compares a presented bearer token with the gateway's in
// constant time (both hashed, so their lengths do not show either).
func (s *Server) tokenOK(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
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

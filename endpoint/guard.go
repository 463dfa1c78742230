package endpoint

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// DefaultBodyTimeout bounds reading a request's body when Options.BodyTimeout
// is zero.
const DefaultBodyTimeout = 60 * time.Second

// allowedHost is one --allow-host entry; an empty port matches any port.
type allowedHost struct{ host, port string }

// parseAllowHosts normalizes Options.AllowHosts.
func parseAllowHosts(in []string) ([]allowedHost, error) {
	out := make([]allowedHost, 0, len(in))
	for _, raw := range in {
		h, port := splitHost(strings.ToLower(strings.TrimSpace(raw)))
		if h == "" || strings.ContainsAny(h, "/@?#") || (port != "" && !isPort(port)) {
			return nil, fmt.Errorf("allowed host %q (--allow-host): want a host name or IP, optionally with :port, e.g. bridge.example.com or bridge.example.com:8787", raw)
		}
		out = append(out, allowedHost{h, port})
	}
	return out, nil
}

// parseAllowOrigins normalizes Options.AllowOrigins to scheme://host[:port].
func parseAllowOrigins(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, raw := range in {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("allowed origin %q (--allow-origin): want scheme://host[:port] as a browser sends it, e.g. https://dash.example.com", raw)
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out, nil
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 1<<16
}

// splitHost splits host[:port], with or without IPv6 brackets.
func splitHost(hp string) (host, port string) {
	if h, p, err := net.SplitHostPort(hp); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), ""
}

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
		if !e.hostAllowed(r) {
			writeError(w, http.StatusForbidden, "forbidden-host", fmt.Sprintf(
				"this endpoint serves only its listen address, localhost and loopback IPs on its port, not Host %q; start the bridge with --allow-host to serve another name", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			cross, ok := e.originAllowed(r, origin)
			if !ok {
				writeError(w, http.StatusForbidden, "forbidden-origin", fmt.Sprintf(
					"browser pages from %q may not use this endpoint; open the inbox the bridge serves, or start the bridge with --allow-origin %s", origin, origin))
				return
			}
			if cross && cors(w, r, origin) {
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

// hostAllowed applies the Host rule of guard.
func (e *Endpoint) hostAllowed(r *http.Request) bool {
	host, port := splitHost(strings.ToLower(r.Host))
	for _, a := range e.hosts {
		if a.host == host && (a.port == "" || a.port == port) {
			return true
		}
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false // not served by net/http: the port cannot be known
	}
	lhost, lport, err := net.SplitHostPort(la.String())
	if err != nil {
		return false
	}
	if port == "" {
		port = "80"
		if r.TLS != nil {
			port = "443"
		}
	}
	if port != lport {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.Equal(net.ParseIP(lhost)))
}

// originAllowed applies the Origin rule of guard; cross reports an allowed
// origin other than the endpoint's own.
func (e *Endpoint) originAllowed(r *http.Request, origin string) (cross, ok bool) {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	o := strings.ToLower(origin)
	if o == scheme+strings.ToLower(r.Host) {
		return false, true
	}
	for _, a := range e.origins {
		if o == a {
			return true, true
		}
	}
	return false, false
}

// cors adds the CORS headers an allowed foreign origin needs to read a
// response, and answers a preflight; it reports whether it answered.
func cors(w http.ResponseWriter, r *http.Request, origin string) bool {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, AEP-Version, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

package hostguard

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Policy is the Host and Origin rule of one HTTP surface. The zero value
// allows only the surface's own address, localhost and loopback IPs, and
// its own origin. A Policy is immutable and safe for concurrent use.
type Policy struct {
	hosts   []allowedHost
	origins []string
}

// allowedHost is one --allow-host entry; an empty port matches any port.
type allowedHost struct{ host, port string }

// New parses the extra hosts ("name", any port, or "name:port") and origins
// (scheme://host[:port]) a surface serves besides its own (--allow-host,
// --allow-origin).
func New(allowHosts, allowOrigins []string) (*Policy, error) {
	p := &Policy{}
	for _, raw := range allowHosts {
		h, port := SplitHost(strings.ToLower(strings.TrimSpace(raw)))
		if h == "" || strings.ContainsAny(h, "/@?#") || (port != "" && !isPort(port)) {
			return nil, fmt.Errorf("allowed host %q (--allow-host): want a host name or IP, optionally with :port, e.g. bridge.example.com or bridge.example.com:8787", raw)
		}
		p.hosts = append(p.hosts, allowedHost{h, port})
	}
	for _, raw := range allowOrigins {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("allowed origin %q (--allow-origin): want scheme://host[:port] as a browser sends it, e.g. https://dash.example.com", raw)
		}
		p.origins = append(p.origins, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return p, nil
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 1<<16
}

// SplitHost splits host[:port], with or without IPv6 brackets.
func SplitHost(hp string) (host, port string) {
	if h, p, err := net.SplitHostPort(hp); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), ""
}

// HostAllowed reports whether r's Host names the address r arrived on,
// localhost or a loopback IP (each with that port), or an allowed host.
// Requests not served by net/http (no local address) are refused, since
// their port cannot be known.
func (p *Policy) HostAllowed(r *http.Request) bool {
	host, port := SplitHost(strings.ToLower(r.Host))
	for _, a := range p.hosts {
		if a.host == host && (a.port == "" || a.port == port) {
			return true
		}
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
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

// OriginAllowed reports whether a browser page of origin may use the
// surface r arrived on; cross reports an allowed origin other than the
// surface's own (it needs CORS headers).
func (p *Policy) OriginAllowed(r *http.Request, origin string) (cross, ok bool) {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	o := strings.ToLower(origin)
	if o == scheme+strings.ToLower(r.Host) {
		return false, true
	}
	for _, a := range p.origins {
		if o == a {
			return true, true
		}
	}
	return false, false
}

// CORS adds the headers an allowed foreign origin needs to read a
// response, and answers its preflight with the given methods and request
// headers allowed; it reports whether it answered. expose lists response
// headers the page may read (nil for none).
func CORS(w http.ResponseWriter, r *http.Request, origin, methods, headers string, expose []string) bool {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if len(expose) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(expose, ", "))
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", headers)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

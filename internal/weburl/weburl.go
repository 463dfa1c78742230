package weburl

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Rule is the sentence that ends each refusal: which URLs are allowed.
const Rule = "only https URLs (or http to a loopback host) are allowed"

// Refusal is a URL Check refuses. Why names at most the URL's scheme and
// host; a caller may end it with its own rule instead of Rule.
type Refusal struct {
	Why string
	// NoHost says the URL is https but names no host.
	NoHost bool
}

func (r *Refusal) Error() string { return r.Why + "; " + Rule }

// Check decides whether raw may be used: an absolute https URL with a
// host, or an http URL whose host is loopback (localhost or a loopback IP;
// names are not resolved). Any other scheme (javascript:, file:, data:,
// or http to a remote host, which anyone on the path can read and
// rewrite) is refused with a *Refusal. It names at most the scheme and
// the host, since it is logged.
func Check(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		// Never the URL itself: errors are logged, and its path and
		// query may carry secrets.
		return &Refusal{Why: "the URL is not an absolute URL"}
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme == "https" && u.Host != "":
		return nil
	case scheme == "http" && IsLoopback(u.Hostname()):
		return nil
	case scheme == "http":
		return &Refusal{Why: fmt.Sprintf("a URL with the http scheme to the remote host %q is refused: plain http can be read and rewritten on the way", u.Hostname())}
	case scheme == "https":
		return &Refusal{Why: "the https URL names no host", NoHost: true}
	}
	if len(scheme) > maxScheme {
		return &Refusal{Why: "a URL with an unknown scheme is refused"}
	}
	return &Refusal{Why: fmt.Sprintf("a URL with the %s: scheme is refused", scheme)}
}

// maxScheme is the longest scheme an error or a log names: a longer one
// is more likely a pasted secret than a scheme.
const maxScheme = 16

// IsLoopback reports whether host is localhost or a loopback IP. Names
// are not resolved: a name that resolves to loopback today may not
// tomorrow.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Display is what may be shown of raw in logs and errors: the scheme and
// the host (with its port), never the user info, path or query.
func Display(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(not an absolute URL)"
	}
	if len(u.Scheme) > maxScheme {
		return "(a URL with an unknown scheme)"
	}
	if u.Host == "" {
		return strings.ToLower(u.Scheme) + ":"
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host
}

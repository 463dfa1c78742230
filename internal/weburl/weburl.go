package weburl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Rule is the sentence that ends each refusal: which URLs are allowed.
const Rule = "only https URLs (or http to a loopback host) are allowed"

// Check decides whether raw may be used: an absolute https URL with a
// host, or an http URL whose host is loopback (localhost or a loopback IP;
// names are not resolved). Any other scheme (javascript:, file:, data:,
// or http to a remote host, which anyone on the path can read and
// rewrite) is refused. The error names at most the scheme and the host,
// since it is logged.
func Check(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		// Never the URL itself: errors are logged, and its path and
		// query may carry secrets.
		return errors.New("the URL is not an absolute URL; " + Rule)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme == "https" && u.Host != "":
		return nil
	case scheme == "http" && IsLoopback(u.Hostname()):
		return nil
	case scheme == "http":
		return fmt.Errorf("a URL with the http scheme to the remote host %q is refused: plain http can be read and rewritten on the way; %s", u.Hostname(), Rule)
	case scheme == "https":
		return errors.New("the https URL names no host; " + Rule)
	}
	return fmt.Errorf("a URL with the %s: scheme is refused; %s", scheme, Rule)
}

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
	if u.Host == "" {
		return strings.ToLower(u.Scheme) + ":"
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host
}

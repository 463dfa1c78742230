package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
)

// ErrUnauthorized is wrapped by the *HTTPStatusError of a 401 or 403
// answer: the server wants credentials the bridge was not given.
var ErrUnauthorized = errors.New("the server wants credentials")

// HTTPStatusError is an HTTP status the transport cannot go on from.
// Callers match it with errors.As, and ErrUnauthorized with errors.Is.
type HTTPStatusError struct {
	// Method is the request's method: GET, POST or DELETE.
	Method string
	// URL is the request's URL, without userinfo or query (DisplayURL).
	URL string
	// Code is the status code, e.g. 405.
	Code int
	// Body is the start of the response body, trimmed; it may be "".
	Body string
	// Redirect is where a redirect (3xx) pointed, by scheme and host
	// only; "" for any other status or a redirect without a Location.
	Redirect string
}

// maxErrorBody bounds how much of an error response is kept for a message.
const maxErrorBody = 2048

// newHTTPStatusError reads the start of resp's body into the error.
func newHTTPStatusError(req *http.Request, resp *http.Response) *HTTPStatusError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &HTTPStatusError{Method: req.Method, URL: DisplayURL(req.URL.String()), Code: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	if e.redirected() {
		if to, err := resp.Location(); err == nil {
			e.Redirect = origin(to)
		}
	}
	return e
}

// redirected reports whether the status is a redirect, which the bridge
// does not follow (noRedirects).
func (e *HTTPStatusError) redirected() bool { return e.Code >= 300 && e.Code < 400 }

// noRedirects is the upstream client's CheckRedirect: a redirect is not
// followed, since it would carry the client's messages and the --url's
// headers (X-Api-Key, Mcp-Session-Id; Go drops only Authorization and
// Cookie) to wherever the server says. The 3xx is the answer
// (HTTPStatusError).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func (e *HTTPStatusError) Error() string {
	if e.Unauthorized() {
		return fmt.Sprintf("%v (HTTP %d from %s); pass --header 'Authorization: …' with the server's credentials", ErrUnauthorized, e.Code, e.URL)
	}
	if e.redirected() {
		to := "elsewhere"
		if e.Redirect != "" {
			to = "to " + e.Redirect
		}
		return fmt.Sprintf("the server answered %s with HTTP %d, a redirect %s, which the bridge does not follow (it would take the --url's headers there); point --url at the final URL",
			e.Method, e.Code, to)
	}
	if e.Body == "" {
		return fmt.Sprintf("the server answered %s with HTTP %d", e.Method, e.Code)
	}
	return fmt.Sprintf("the server answered %s with HTTP %d: %s", e.Method, e.Code, e.Body)
}

// Unauthorized reports whether the status is 401 or 403.
func (e *HTTPStatusError) Unauthorized() bool {
	return e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden
}

// Unwrap returns ErrUnauthorized for a 401 or 403, and nil otherwise.
func (e *HTTPStatusError) Unwrap() error {
	if e.Unauthorized() {
		return ErrUnauthorized
	}
	return nil
}

// hasStatus reports whether err is an *HTTPStatusError with the code.
func hasStatus(err error, code int) bool {
	se, ok := errors.AsType[*HTTPStatusError](err)
	return ok && se.Code == code
}

// withoutURL is err without net/http's *url.Error around it, whose
// message quotes the request's whole URL, query (?api_key=…) and
// userinfo included; the cause inside stays matchable with errors.As.
func withoutURL(err error) error {
	if ue, ok := errors.AsType[*neturl.Error](err); ok {
		return ue.Err
	}
	return err
}

// describeNetErr wraps a transport error with what to do about it; the
// cause stays matchable with errors.As.
func describeNetErr(rawURL string, err error) error {
	url := DisplayURL(rawURL)
	err = withoutURL(err)
	if dnsErr, ok := errors.AsType[*net.DNSError](err); ok {
		return fmt.Errorf("cannot resolve the server's host (%s): %w; check --url", url, dnsErr)
	}
	if isTLSFailure(err) {
		return fmt.Errorf("TLS failed talking to %s: %w; check the URL's scheme and the server's certificate", url, err)
	}
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
		return fmt.Errorf("cannot connect to %s: %w; is the server running?", url, err)
	}
	return fmt.Errorf("the request to %s failed: %w; the server may have stopped answering", url, err)
}

// isTLSFailure reports whether err comes from setting up TLS: the
// server's certificate failed verification, the server is not speaking
// TLS (an https:// URL on a plain HTTP port), or it refused the handshake
// with an alert.
func isTLSFailure(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		return true
	}
	// An alert the server sent: crypto/tls reports it as an *net.OpError
	// whose Op is "remote error" (the alert's own type is unexported).
	opErr, ok := errors.AsType[*net.OpError](err)
	return ok && opErr.Op == "remote error"
}

// DisplayURL is a URL as errors and logs show it: without userinfo or
// query, where credentials (user:pass@, ?api_key=) travel.
func DisplayURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "the --url address"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.Fragment = ""
	return u.String()
}

package upstream

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// ErrUnauthorized is wrapped by errors for 401 and 403 answers.
var ErrUnauthorized = errors.New("the server wants credentials")

// describeNetErr turns a transport error into advice.
func describeNetErr(url string, err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve the server's host (%s): %v; check --url", url, dnsErr)
	case strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "tls:"):
		return fmt.Sprintf("TLS failed talking to %s: %v; check the URL's scheme and the server's certificate", url, err)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("cannot connect to %s: %v; is the server running?", url, err)
	}
	return fmt.Sprintf("the request to %s failed: %v; the server may have stopped answering", url, err)
}

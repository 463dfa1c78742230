package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// DialFunc opens a network connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// discoveryWait bounds one discovery request.
const discoveryWait = 5 * time.Second

// peer is what answered AEP discovery (AEP-0003 §3.4) without credentials.
type peer struct {
	// proof says it offers the token proof (package proof).
	proof bool
	// what says what answered, for errors: never the token, and the
	// peer's own strings only quoted and shortened.
	what string
}

// targets are the URLs of one relay or hub: its socket, where the token
// proof runs, and its discovery document.
type targets struct {
	socket, join, discovery string
	// host is the Host the bridge dials, which the proof is bound to.
	host string
	// bearerOK says the bearer token may go to this peer when it does not
	// offer the proof: over TLS, or to a loopback address. It also says
	// the link's channel is safe after a token proof; off this machine
	// without TLS it is cleartext (LinkOptions.PlainRemote).
	bearerOK bool
}

// targetsOf derives a peer's URLs from its socket URL
// (ws[s]://host[:port]{base}/socket): the proof is at {base}/join and
// discovery at {base}/events, beside it.
func targetsOf(socket string) (targets, error) {
	u, err := url.Parse(socket)
	if err != nil {
		return targets{}, err
	}
	base := u.Path[:strings.LastIndex(u.Path, "/")+1]
	base = strings.TrimSuffix(base, "/")
	httpScheme := "http"
	if u.Scheme == "wss" {
		httpScheme = "https"
	}
	join, disc := *u, *u
	join.Path, join.RawQuery = base+proof.Path, ""
	disc.Scheme, disc.Path, disc.RawQuery = httpScheme, base+"/events", ""
	return targets{socket: socket, join: join.String(), discovery: disc.String(), host: u.Host,
		bearerOK: u.Scheme == "wss" || isLoopback(u.Hostname())}, nil
}

// isLoopback reports whether host is localhost or a loopback IP literal.
// Names are not resolved: a name that resolves to loopback today may not
// tomorrow.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// discoveryClient is an HTTP client for discovery: no credentials, no
// redirects, no kept connections. timeout bounds one request; 0 leaves it
// to the request's context.
func discoveryClient(dial DialFunc, timeout time.Duration) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: dial, TLSHandshakeTimeout: discoveryWait}
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// discover asks url for the discovery document, without any credential. A
// nil error means something answered HTTP; the peer says what.
func discover(ctx context.Context, client *http.Client, url string) (peer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return peer{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return peer{what: "something that does not answer HTTP"}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	server := ""
	if s := resp.Header.Get("Server"); s != "" {
		server = ", server " + shorten(s)
	}
	var doc struct {
		AEP          []string          `json:"aep"`
		Capabilities *aep.Capabilities `json:"capabilities"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil || len(doc.AEP) == 0 {
		return peer{what: fmt.Sprintf("an HTTP server that answered %s to AEP discovery%s", shorten(resp.Status), server)}, nil
	}
	if doc.Capabilities != nil && proof.Advertised(doc.Capabilities.Experimental) {
		return peer{proof: true, what: "an AEP endpoint that offers the token proof" + server}, nil
	}
	return peer{what: "an AEP endpoint without the token proof (another AEP server, or an older bridge)" + server}, nil
}

// shorten quotes a peer's string for an error: escaped, at most 160 bytes.
func shorten(s string) string {
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return strconv.Quote(s)
}

// Refusal is the error of a link or join that sent nothing to its peer
// because the peer did not prove it knows the token and the token may not
// go to it in clear. It says why and what to do.
type Refusal struct {
	// Addr is the peer's host:port.
	Addr string
	// What says what answered there.
	What string
	// Why says why nothing was sent, and what to do.
	Why string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s is held by %s: %s", r.Addr, r.What, r.Why)
}

// IsRefusal reports whether err is a Refusal.
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

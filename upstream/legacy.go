package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
)

// legacy is the 2024-11-05 HTTP+SSE transport: a GET event stream whose
// first event names the endpoint messages are POSTed to.
type legacy struct {
	c        *Conn
	endpoint string
}

// Event types of the HTTP+SSE transport (MCP 2024-11-05, "HTTP with
// SSE"); mcp-go exports no constants for them.
const (
	// eventEndpoint is the first event: its data is the URL to POST to.
	eventEndpoint = "endpoint"
	// eventMessage carries one JSON-RPC message; it is also the type of
	// an event that names none.
	eventMessage = "message"
)

// endpointWait bounds the wait for the endpoint event.
const endpointWait = 30 * time.Second

// startLegacy opens the event stream and waits for the endpoint event.
func (c *Conn) startLegacy() error {
	req, err := http.NewRequestWithContext(c.ctx, "GET", c.opts.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	c.headers(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("opening the HTTP+SSE stream: %w", describeNetErr(c.opts.URL, err))
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		se := newHTTPStatusError(req, resp)
		if se.Unauthorized() {
			return se
		}
		return fmt.Errorf("opening the HTTP+SSE stream: %w; is --url right?", se)
	}
	endpoint := make(chan string, 1)
	c.wg.Add(1)
	go c.readLegacyStream(resp.Body, endpoint)
	t := time.NewTimer(endpointWait)
	defer t.Stop()
	select {
	case ep, ok := <-endpoint:
		if !ok || ep == "" {
			return fmt.Errorf("the HTTP+SSE stream sent no endpoint event; is --url the server's SSE URL?")
		}
		base, _ := url.Parse(c.opts.URL)
		ref, err := url.Parse(ep)
		if err != nil {
			return fmt.Errorf("the server's endpoint event %q is not a URL", ep)
		}
		to := base.ResolveReference(ref)
		if !sameOrigin(to, base) {
			// Every client message, with the --header credentials and the
			// session, would go there.
			return fmt.Errorf("the server's endpoint event points to %s, another origin than --url's %s: refused, since the bridge would send the client's messages and the --url's headers there; "+
				"point --url at the server that takes the messages", origin(to), origin(base))
		}
		c.mu.Lock()
		c.legacy = &legacy{c: c, endpoint: to.String()}
		c.mu.Unlock()
		return nil
	case <-t.C:
		return fmt.Errorf("the HTTP+SSE stream sent no endpoint event within %v", endpointWait)
	case <-c.ctx.Done():
		return io.ErrClosedPipe
	}
}

// readLegacyStream reads the HTTP+SSE stream until it ends: the first
// endpoint event goes to endpoint (closed if the stream ends first), and
// messages to the reader. The session cannot outlive its stream, so its
// end stops the Conn.
func (c *Conn) readLegacyStream(body io.ReadCloser, endpoint chan<- string) {
	defer c.wg.Done()
	defer body.Close()
	got := false
	lastID := ""
	err := c.readEvents(body, &lastID, DefaultMaxMessage, func(ev sse.Event) bool {
		switch {
		case !got && ev.Type == eventEndpoint && ev.Rest != nil:
			c.log.Warn("the server's endpoint event is too large to be a URL; ignored", "over_bytes", DefaultMaxMessage)
		case !got && ev.Type == eventEndpoint:
			got = true
			endpoint <- strings.TrimSpace(string(ev.Data))
		case ev.Type == eventMessage:
			c.relayEvent(ev, nil, nil)
		}
		return true
	})
	if !got {
		close(endpoint)
	}
	if c.ctx.Err() == nil {
		if err != nil {
			c.log.Error("the HTTP+SSE stream broke; the session is lost", "err", err)
		} else {
			c.log.Error("the HTTP+SSE stream ended; the session is lost")
		}
		c.stop() // ends the session: the reader sees EOF
	}
}

// post sends one message; the answer arrives on the event stream.
func (l *legacy) post(msg []byte) error {
	var env envelope
	json.Unmarshal(msg, &env)
	done := make(chan struct{})
	l.send(bytes.NewReader(msg), func() envelope { return env }, done)
	return nil
}

// send POSTs body, a message that env says what it is of, and closes
// wrote once the POST is done; a streamed body (an *io.PipeReader) is
// closed when the POST fails, so its writer stops.
func (l *legacy) send(body io.Reader, env func() envelope, wrote chan struct{}) {
	defer close(wrote)
	abandon := func(err error) {
		if pr, ok := body.(*io.PipeReader); ok {
			pr.CloseWithError(err)
		}
	}
	req, err := http.NewRequestWithContext(l.c.ctx, "POST", l.endpoint, body)
	if err != nil {
		abandon(err)
		l.c.fail(env().ID, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	l.c.headers(req.Header)
	resp, err := l.c.hc.Do(req)
	if err != nil {
		abandon(withoutURL(err))
		l.c.fail(env().ID, describeNetErr(l.endpoint, err).Error())
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		l.c.fail(env().ID, newHTTPStatusError(req, resp).Error())
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (a default port written out or not), as browsers and the MCP SDKs
// compare an HTTP+SSE endpoint with the stream's URL.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// port is u's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// origin shows u's scheme and host only: a path or query may carry a
// credential.
func origin(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

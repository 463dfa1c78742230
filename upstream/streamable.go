package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"
)

// Options configure a remote upstream.
type Options struct {
	// URL is the server's MCP endpoint (streamable HTTP) or its SSE URL.
	URL string
	// Header is added to every request (--header), e.g. Authorization.
	Header http.Header
	// Transport is "streamable", "sse", or "" to choose automatically:
	// streamable HTTP, falling back to HTTP+SSE when the server answers
	// the initialize POST the way the spec's backwards-compatibility
	// section describes.
	Transport string
	// Client is the HTTP client; nil means one with no overall timeout
	// (streams and human answers last as long as they need) and a 10 s
	// dial timeout.
	Client *http.Client
	// Logger receives logs; nil discards them. Headers are never logged.
	Logger *slog.Logger
}

// ErrUnauthorized is wrapped by errors for 401 and 403 answers.
var ErrUnauthorized = errors.New("the server wants credentials")

// Conn is a remote MCP server as a stream of raw JSON-RPC messages.
// It implements elicit.Conn. It is safe for concurrent use.
type Conn struct {
	opts Options
	hc   *http.Client
	log  *slog.Logger
	in   chan []byte
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// order keeps POSTs in the order the client sent them: a POST's
	// body is on the wire before the next one starts.
	order sync.Mutex

	// mu guards the fields below.
	mu        sync.Mutex
	session   string
	version   string
	legacy    *legacy // set when the HTTP+SSE transport is in use
	getStream bool
	closed    bool
}

// Dial prepares a remote upstream. Nothing is sent until the client's
// first message.
func Dial(o Options) (*Conn, error) {
	switch o.Transport {
	case "", "streamable", "sse":
	default:
		return nil, fmt.Errorf("--transport %q: want streamable or sse", o.Transport)
	}
	if !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://") {
		return nil, fmt.Errorf("--url %q: want an http:// or https:// URL", o.URL)
	}
	c := &Conn{opts: o, hc: o.Client, log: o.Logger, in: make(chan []byte, 256)}
	if c.hc == nil {
		c.hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 16,
		}}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	if o.Transport == "sse" {
		if err := c.startLegacy(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ReadMessage returns the next message from the server; io.EOF after Close.
func (c *Conn) ReadMessage() ([]byte, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.ctx.Done():
		return nil, io.EOF
	}
}

// deliver hands a server message to the reader.
func (c *Conn) deliver(m []byte) {
	select {
	case c.in <- m:
	case <-c.ctx.Done():
	}
}

// envelope is what the transport reads of a client message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (e envelope) isRequest() bool { return e.Method != "" && len(e.ID) > 0 && string(e.ID) != "null" }

// fail answers a client request with a JSON-RPC error, so nothing hangs.
func (c *Conn) fail(id json.RawMessage, msg string) {
	if len(id) == 0 || string(id) == "null" {
		c.log.Warn("upstream error on a message that takes no response", "err", msg)
		return
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32000, "message": msg}})
	c.deliver(b)
}

// WriteMessage sends one client message to the server. For streamable
// HTTP it is POSTed; the response (JSON, or an SSE stream) is read in the
// background, so a long call never blocks the next message.
func (c *Conn) WriteMessage(msg []byte) error {
	c.mu.Lock()
	lg, closed := c.legacy, c.closed
	c.mu.Unlock()
	if closed {
		return io.ErrClosedPipe
	}
	if lg != nil {
		return lg.post(msg)
	}
	var env envelope
	json.Unmarshal(msg, &env) // batches have no id: their errors are logged
	c.order.Lock()
	wrote := make(chan struct{})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.post(msg, env, wrote)
	}()
	select {
	case <-wrote:
	case <-c.ctx.Done():
	}
	c.order.Unlock()
	return nil
}

func (c *Conn) headers(h http.Header) {
	for k, vs := range c.opts.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	c.mu.Lock()
	if c.session != "" {
		h.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		h.Set("MCP-Protocol-Version", c.version)
	}
	c.mu.Unlock()
}

// post sends msg and handles the response.
func (c *Conn) post(msg []byte, env envelope, wrote chan struct{}) {
	var once sync.Once
	signal := func() { once.Do(func() { close(wrote) }) }
	defer signal()
	req, err := http.NewRequestWithContext(c.ctx, "POST", c.opts.URL, bytes.NewReader(msg))
	if err != nil {
		c.fail(env.ID, "building the request: "+err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.headers(req.Header)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { signal() }}))
	resp, err := c.hc.Do(req)
	if err != nil {
		if c.ctx.Err() == nil {
			c.fail(env.ID, describeNetErr(c.opts.URL, err))
		}
		return
	}
	defer resp.Body.Close()
	isInit := env.Method == "initialize"
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && isInit && resp.StatusCode < 300 {
		c.mu.Lock()
		c.session = sid
		c.mu.Unlock()
		// Open the GET stream before the client sees the initialize
		// result: what the server sends right after the client's
		// initialized notification (a tools/list_changed, say) must have
		// a stream to arrive on.
		select {
		case <-c.startGetStream():
		case <-time.After(5 * time.Second):
			c.log.Warn("the server's GET stream did not open within 5s; going on without waiting")
		}
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		c.fail(env.ID, fmt.Sprintf("%v (HTTP %d from %s); pass --header 'Authorization: …' with the server's credentials", ErrUnauthorized, resp.StatusCode, c.opts.URL))
		return
	case resp.StatusCode == http.StatusNotFound && c.hasSession() && !isInit:
		c.mu.Lock()
		c.session = ""
		c.mu.Unlock()
		c.fail(env.ID, "the server ended the MCP session (HTTP 404 for its session id); reconnect the client so it starts a new session with initialize")
		return
	case isInit && c.opts.Transport == "" && (resp.StatusCode == 400 || resp.StatusCode == 404 || resp.StatusCode == 405):
		// Backwards compatibility: an HTTP+SSE server. Switch and resend.
		c.log.Info("the server does not take streamable HTTP; trying the HTTP+SSE transport", "status", resp.StatusCode)
		if err := c.startLegacy(); err != nil {
			c.fail(env.ID, err.Error())
			return
		}
		c.mu.Lock()
		lg := c.legacy
		c.mu.Unlock()
		if err := lg.post(msg); err != nil {
			c.fail(env.ID, err.Error())
		}
		return
	case resp.StatusCode >= 300:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		c.fail(env.ID, fmt.Sprintf("the server answered HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body))))
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			c.fail(env.ID, "reading the server's response: "+err.Error())
			return
		}
		if !json.Valid(body) {
			c.fail(env.ID, "the server's response is not JSON; is --url the server's MCP endpoint?")
			return
		}
		if isInit {
			c.learnVersion(body)
		}
		c.deliver(bytes.TrimSpace(body))
	case "text/event-stream":
		c.readResponseStream(resp.Body, env, isInit)
	default:
		c.fail(env.ID, fmt.Sprintf("the server answered with Content-Type %q, not JSON or an event stream; is --url the server's MCP endpoint?", resp.Header.Get("Content-Type")))
	}
}

func (c *Conn) hasSession() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session != ""
}

func (c *Conn) learnVersion(body []byte) {
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &r) == nil && r.Result.ProtocolVersion != "" {
		c.mu.Lock()
		c.version = r.Result.ProtocolVersion
		c.mu.Unlock()
	}
}

// readResponseStream delivers a POST's SSE stream until the response to
// the request arrives. A stream that drops first is resumed with GET and
// Last-Event-ID; one that cannot be resumed fails the request.
func (c *Conn) readResponseStream(body io.Reader, env envelope, isInit bool) {
	lastID := ""
	answered := !env.isRequest()
	want := string(env.ID)
	handle := func(ev sseEvent) bool {
		if ev.id != "" {
			lastID = ev.id
		}
		if len(bytes.TrimSpace(ev.data)) == 0 {
			return true
		}
		if !json.Valid(ev.data) {
			c.log.Warn("the server sent an event that is not JSON; skipped")
			return true
		}
		if isInit {
			c.learnVersion(ev.data)
		}
		c.deliver(ev.data)
		var e struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(ev.data, &e) == nil && e.Method == "" && string(compactJSON(e.ID)) == string(compactJSON(json.RawMessage(want))) {
			answered = true
			return false
		}
		return true
	}
	err := readSSE(body, handle)
	for attempt := 0; !answered && c.ctx.Err() == nil; attempt++ {
		if lastID == "" || attempt >= 5 {
			reason := "the server closed the response stream before answering"
			if err != nil {
				reason = "the response stream broke: " + err.Error()
			}
			c.fail(env.ID, reason+"; the server may have stopped answering")
			return
		}
		c.log.Info("the response stream dropped; resuming it", "last_event_id_set", true, "attempt", attempt+1)
		select {
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		case <-c.ctx.Done():
			return
		}
		resp, rerr := c.get(lastID)
		if rerr != nil {
			err = rerr
			continue
		}
		err = readSSE(resp.Body, handle)
		resp.Body.Close()
	}
}

// get opens a GET event stream, resuming after lastID when set.
func (c *Conn) get(lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(c.ctx, "GET", c.opts.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	c.headers(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET stream: HTTP %d", resp.StatusCode)
	}
	return resp, nil
}

// startGetStream opens the standing GET stream for server-initiated
// messages, where the server offers one, and keeps it open. The returned
// channel is closed once the first attempt is answered (the stream is open,
// or the server offers none).
func (c *Conn) startGetStream() <-chan struct{} {
	ready := make(chan struct{})
	c.mu.Lock()
	if c.getStream {
		c.mu.Unlock()
		close(ready)
		return ready
	}
	c.getStream = true
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var once sync.Once
		first := func() { once.Do(func() { close(ready) }) }
		defer first()
		lastID, backoff := "", 200*time.Millisecond
		for c.ctx.Err() == nil {
			resp, err := c.get(lastID)
			first()
			if err != nil {
				if strings.Contains(err.Error(), "HTTP 405") {
					c.log.Debug("the server offers no GET stream")
					return
				}
				select {
				case <-time.After(backoff):
				case <-c.ctx.Done():
					return
				}
				backoff = min(backoff*2, 10*time.Second)
				continue
			}
			backoff = 200 * time.Millisecond
			readSSE(resp.Body, func(ev sseEvent) bool {
				if ev.id != "" {
					lastID = ev.id
				}
				if len(bytes.TrimSpace(ev.data)) > 0 && json.Valid(ev.data) {
					c.deliver(ev.data)
				}
				return true
			})
			resp.Body.Close()
		}
	}()
	return ready
}

// Close ends the session: DELETE for streamable HTTP, then stops every
// stream.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	session, lg := c.session, c.legacy
	c.mu.Unlock()
	if session != "" && lg == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, "DELETE", c.opts.URL, nil)
		if err == nil {
			c.headers(req.Header)
			if resp, err := c.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
	}
	c.stop()
	c.wg.Wait()
	return nil
}

func compactJSON(b json.RawMessage) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

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

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
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
	// (streams and human answers last as long as they need), a 10 s
	// dial timeout, and no redirects followed (a 3xx is an error that
	// says where to). A given client's redirect policy is its own.
	Client *http.Client
	// Logger receives logs; nil discards them. Headers are never logged.
	Logger *slog.Logger
	// AckWait bounds how long a message waits for the server to
	// acknowledge the one before it (its 202, or the start of its
	// response) once that one's body is sent. Zero means DefaultAckWait.
	AckWait time.Duration
	// MaxWholeMessage bounds a client message the transport must read
	// whole before posting it: one of a session that may be of the
	// 2026-07-28 era, whose request headers mirror values from anywhere
	// in its body (writeStream). A larger request is not posted and is
	// answered with an error that names the limit. Zero means
	// DefaultMaxWholeMessage.
	MaxWholeMessage int
	// ToolHeaders, when set, holds the x-mcp-header bindings the
	// connection learns from tools/list results and mirrors into a
	// tools/call's Mcp-Param-* headers, shared with the other connections
	// to the same server: a gateway opens one connection per stateless
	// request, so a tools/call's connection never relayed the tools/list
	// that taught the bindings. Nil keeps them to this connection.
	ToolHeaders *ToolHeaders
}

// DefaultMaxWholeMessage is the MaxWholeMessage of a zero Options: 16 MiB,
// the most the transport holds of any message it must read whole (a
// modern request, or a modern tools/list result), as internal/sse holds
// of an event's fields.
const DefaultMaxWholeMessage = sse.DefaultMaxEventSize

// DefaultAckWait is the AckWait of a zero Options. A server that holds a
// JSON response until its work is done acknowledges nothing until then;
// past this wait the next message goes anyway, so a long call never
// holds up the messages after it (its cancellation among them).
const DefaultAckWait = time.Second

// Conn is a remote MCP server as a stream of raw JSON-RPC messages.
// It implements elicit.Conn. It is safe for concurrent use.
type Conn struct {
	opts Options
	hc   *http.Client
	log  *slog.Logger
	in   chan inbound
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// order keeps POSTs in the order the client sent them: each one
	// goes out once the server acknowledged the one before it (or
	// AckWait passed after that one's body was sent), whose
	// acknowledgement it guards (prevAck). A message waits for the one
	// before it only when it comes: the caller of Write does not wait for
	// its own message's acknowledgement.
	order   sync.Mutex
	prevAck *ack
	// lastAck is prevAck, for Close to wait on without order, which a
	// writer may hold while the server stalls.
	lastAck atomic.Pointer[ack]

	// url is opts.URL parsed once (nil when it does not parse: each POST
	// then parses it, and fails as it says).
	url *url.URL
	// direct is the transport's own HTTP/1.1 exchange for the POSTs of
	// whole messages (h1.go); nil when net/http does every POST.
	direct *direct
	// jobs hands a POST to an idle poster goroutine (see poster).
	jobs chan postJob
	// idlePosters counts the posters waiting for a job.
	idlePosters atomic.Int32

	// modern is what the 2026-07-28 request metadata needs.
	modern modernState
	// retry is the reconnection time the server set last (reconnect.go).
	retry serverRetry
	// resumes are the response streams that may be resumed, so a
	// client's cancellation stops their resumption.
	resumes resumeSet

	// mu guards the fields below.
	mu        sync.Mutex
	session   string
	version   string
	legacy    *legacy // set when the HTTP+SSE transport is in use
	getStream bool
	closed    bool
	// header is the headers of a POST (Content-Type, Accept, opts.Header
	// and the session's), built for headerFor (session and version);
	// each POST gets a copy.
	header    http.Header
	headerFor [2]string
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
		return nil, fmt.Errorf("--url %s: want an http:// or https:// URL", DisplayURL(o.URL))
	}
	c := &Conn{opts: o, hc: o.Client, log: o.Logger, in: make(chan inbound, 256), jobs: make(chan postJob)}
	c.modern.bindings = o.ToolHeaders
	if c.modern.bindings == nil {
		c.modern.bindings = NewToolHeaders()
	}
	if u, err := url.Parse(o.URL); err == nil {
		c.url = u
	}
	if c.hc == nil {
		dial := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		c.hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         dial,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: maxIdleConns,
		}, CheckRedirect: noRedirects}
		c.direct = newDirect(c.url, http.ProxyFromEnvironment, dial, maxIdleConns)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.opts.AckWait <= 0 {
		c.opts.AckWait = DefaultAckWait
	}
	if c.opts.MaxWholeMessage <= 0 {
		c.opts.MaxWholeMessage = DefaultMaxWholeMessage
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	if o.Transport == "sse" {
		if err := c.startLegacy(); err != nil {
			c.stop() // ends the stream and its reader
			c.wg.Wait()
			return nil, err
		}
	}
	return c, nil
}

// maxIdleConns bounds the kept-alive connections to the server at rest,
// net/http's and the transport's own (h1.go) each.
const maxIdleConns = 16

// inbound is a server message and, when it came on the response stream
// of a client request, that request's id. A large JSON response comes as
// the head of its body in msg and the rest in rest (see body.go).
type inbound struct {
	msg     []byte
	related json.RawMessage
	rest    io.Reader
}

// Read returns the next message from the server: whole, or a large JSON
// response or event as its head and a stream of the rest (Frame.Rest),
// which must be read before the next Read. Frame.Related is, for a
// message the server sent on the response stream of a client request
// (MCP basic/transports: such messages relate to that request), the
// request's id; nil for a message from the GET stream, a JSON response
// body or the HTTP+SSE stream. It returns io.EOF after Close, and ctx's
// error when ctx ends first. With Write and Close it makes Conn an
// elicit.Conn.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Frame, error) {
	select {
	case m := <-c.in:
		return jsonrpc.Frame{Head: m.msg, Rest: m.rest, Related: m.related}, nil
	case <-c.ctx.Done():
		return jsonrpc.Frame{}, io.EOF
	case <-ctx.Done():
		return jsonrpc.Frame{}, ctx.Err()
	}
}

// Write sends one client message to the server: f.Head, or f.Head and
// then f.Rest as a streamed body (see body.go). For streamable HTTP it is
// POSTed once the server acknowledged the message before it (its 202, or
// the start of its response) or AckWait passed after that one's body was
// sent, so messages reach the server in the order the client sent them;
// the response (JSON, or an SSE stream) is read in the background, so a
// long call never blocks the next message. A Frame with no bytes sends
// nothing: Write holds nothing back. Write does not start once ctx is
// done.
func (c *Conn) Write(ctx context.Context, f jsonrpc.Frame) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case f.Rest != nil:
		return c.writeStream(func(w io.Writer) error {
			if _, err := w.Write(f.Head); err != nil {
				return err
			}
			_, err := io.Copy(w, f.Rest)
			return err
		})
	case len(f.Head) == 0:
		return nil
	}
	return c.writeMessage(f.Head)
}

// deliver hands a server message to the reader.
func (c *Conn) deliver(m []byte) { c.deliverRelated(m, nil) }

// deliverRelated hands a server message that relates to the client
// request with id related (nil: none) to the reader.
func (c *Conn) deliverRelated(m []byte, related json.RawMessage) {
	m = c.modern.inbound(m, func(tool, reason string) {
		c.log.Warn("tools/list: a tool breaks the x-mcp-header rules of MCP 2026-07-28 and is left out", "tool", tool, "reason", reason)
	})
	select {
	case c.in <- inbound{msg: m, related: related}:
	case <-c.ctx.Done():
	}
}

// envelope is what the transport reads of a client message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (e envelope) isRequest() bool { return e.Method != "" && jsonrpc.HasID(e.ID) }

// fail answers a client request with a JSON-RPC error, so nothing hangs.
// The code is -32000, the one MCP SDKs use for a request the connection
// could not carry (jsonrpc.CodeConnectionClosed).
func (c *Conn) fail(id json.RawMessage, msg string) {
	if !jsonrpc.HasID(id) {
		c.log.Warn("upstream error on a message that takes no response", "err", msg)
		return
	}
	c.deliver(jsonrpc.ErrorResponse(id, jsonrpc.CodeConnectionClosed, msg))
}

// writeMessage posts one whole client message (see Write).
func (c *Conn) writeMessage(msg []byte) error {
	c.mu.Lock()
	lg, closed := c.legacy, c.closed
	c.mu.Unlock()
	if closed {
		return io.ErrClosedPipe
	}
	if lg != nil {
		return lg.post(msg)
	}
	out := parseOutbound(msg) // batches have no id: their errors are logged
	c.order.Lock()
	defer c.order.Unlock()
	// What follows a message happens once the server acknowledged it: a
	// cancellation finds the request posted.
	c.awaitPrev()
	c.resumes.cancel(out)
	if c.modern.cancel(out) {
		return nil // 2026-07-28: the closed response stream is the cancellation
	}
	j := postJob{msg: msg, out: out, ack: newAck()}
	if isModern(out.version) {
		// A modern request's own context: closing its response stream is
		// how the client cancels it (2026-07-28). It is noted before the
		// message is handed over, so a cancellation behind it finds it.
		var cancel context.CancelFunc
		j.ctx, cancel = context.WithCancel(c.ctx)
		j.cancel = cancel
		c.modern.note(out, cancel)
	}
	c.prevAck = j.ack
	c.lastAck.Store(j.ack)
	j.early = c.writeEarly(j)
	if !c.startPost(j) {
		if j.early != nil {
			j.early.abandon()
		}
		j.stop(c)
		return io.ErrClosedPipe
	}
	return nil
}

// writeEarly writes the POST of a small whole message on the caller's
// goroutine when a kept-alive connection is at rest (direct.writeIdle),
// so the request is on its way while the poster that reads the response
// is woken; nil, having written nothing, otherwise: the poster then does
// all of the POST. It never dials, and the write fits the connection's
// socket buffer, so the caller does not wait for the server. c.order is
// held: the request goes out in its turn.
func (c *Conn) writeEarly(j postJob) *written {
	if c.direct == nil || len(j.msg) > maxEarlyBody || !c.direct.hasIdle() {
		return nil
	}
	ctx := j.ctx
	if ctx == nil {
		ctx = c.ctx
	}
	req, err := c.newPost(ctx, bytes.NewReader(j.msg))
	if err != nil {
		return nil // the poster builds it again, and fails it as it says
	}
	c.mu.Lock()
	legacy := c.version
	c.mu.Unlock()
	c.modern.setHeaders(req.Header, j.out, legacy)
	if !c.direct.takes(req, len(j.msg)) {
		return nil
	}
	w := c.direct.writeIdle(req)
	if w != nil {
		j.ack.sentBody()
	}
	return w
}

// awaitPrev waits until the server acknowledged the message posted
// before (or AckWait passed after its body was sent), or Close; c.order
// is held.
func (c *Conn) awaitPrev() {
	if c.prevAck != nil {
		c.prevAck.wait(c.ctx, c.opts.AckWait)
	}
}

// postJob is one message for a poster to POST: its own context (with
// cancel; nil for the session's) and its acknowledgement.
type postJob struct {
	msg    []byte
	out    outbound
	ctx    context.Context
	cancel context.CancelFunc
	ack    *ack
	// early is the request writeEarly wrote already, whose response is
	// the poster's to read; nil when the poster does all of the POST.
	early *written
}

// stop ends the job's own context once its POST is over, and forgets
// the request that the client's cancellation would close.
func (j postJob) stop(c *Conn) {
	if j.cancel != nil {
		j.cancel()
		c.modern.done(j.out.ID)
	}
}

// maxIdlePosters bounds the poster goroutines kept waiting for work once
// a burst of concurrent POSTs is over.
const maxIdlePosters = 4

// startPost hands j to an idle poster, or starts one. A POST's goroutine
// grows its stack to what the HTTP client needs; a poster keeps its stack
// for the next POST instead of growing a new goroutine's every time. It
// reports false, posting nothing, once Close began.
func (c *Conn) startPost(j postJob) bool {
	select {
	case c.jobs <- j:
		return true
	default:
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		// Counted under mu with the closed check, so Close's Wait never
		// races an Add.
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if closed {
		j.ack.acknowledge()
		return false
	}
	go c.poster(j)
	return true
}

// poster is the goroutine of one POST at a time: it posts j, then waits
// for the next job while fewer than maxIdlePosters others wait, until
// Close.
func (c *Conn) poster(j postJob) {
	defer c.wg.Done()
	for {
		c.post(j)
		j.stop(c)
		if c.idlePosters.Add(1) > maxIdlePosters {
			c.idlePosters.Add(-1)
			return
		}
		select {
		case j = <-c.jobs:
			c.idlePosters.Add(-1)
		case <-c.ctx.Done():
			c.idlePosters.Add(-1)
			return
		}
	}
}

// postHeader returns the headers of a POST: Content-Type, Accept,
// opts.Header and the session's (its id and protocol version), a copy
// each POST may change.
func (c *Conn) postHeader() http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.header == nil || c.headerFor != [2]string{c.session, c.version} {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		c.headersLocked(h)
		c.header, c.headerFor = h, [2]string{c.session, c.version}
	}
	return c.header.Clone()
}

// headers adds opts.Header and the session's headers (its id and
// protocol version) to h.
func (c *Conn) headers(h http.Header) {
	c.mu.Lock()
	c.headersLocked(h)
	c.mu.Unlock()
}

// headersLocked is headers with c.mu held.
func (c *Conn) headersLocked(h http.Header) {
	for k, vs := range c.opts.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if c.session != "" {
		h.Set(mcp.HeaderSessionID, c.session)
	}
	if c.version != "" {
		h.Set(mcp.HeaderProtocolVersion, c.version)
	}
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
	// The last message handed over is posted before the session ends: it
	// waits for its acknowledgement, as the next message would, for as
	// long as the DELETE may take.
	if last := c.lastAck.Load(); last != nil {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		last.wait(ctx, c.opts.AckWait)
		cancel()
	}
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
	c.direct.close()
	return nil
}

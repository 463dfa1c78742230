package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// post sends j's message and handles the response, acknowledging j.ack
// (see ack) so the next message can follow.
func (c *Conn) post(j postJob) {
	ctx := j.ctx
	if ctx == nil {
		ctx = c.ctx
	}
	c.send(ctx, bytes.NewReader(j.msg), func() outbound { return j.out }, j.msg, j.ack, j.early)
}

// send is post for a body that may be a stream (writeStream): outf says
// what the message is, as far as it has been read (all of it once the body
// is sent), and msg is the whole message when there is one to send again
// (the fall-back to HTTP+SSE). A streamed body (an *io.PipeReader) is
// closed when the POST fails, so its writer stops.
//
// ctx is the request's context: the session's, or a modern request's own,
// whose cancellation closes its response stream (noted with modern.note
// before the message was handed over, so the client's cancellation that
// follows finds it).
//
// early, when not nil, is the request already written on the caller's
// goroutine (writeEarly): only its response is left to read.
func (c *Conn) send(ctx context.Context, body io.Reader, outf func() outbound, msg []byte, a *ack, early *written) {
	defer a.acknowledge()
	if early != nil {
		resp, err := c.direct.readWritten(early)
		c.answer(ctx, early.req, resp, err, outf, msg, a)
		return
	}
	abandon := func(err error) {
		if pr, ok := body.(*io.PipeReader); ok {
			pr.CloseWithError(err)
		}
	}
	out := outf()
	env := out.envelope
	// A whole message small enough goes on the transport's own exchange
	// (h1.go), which says itself when the request is written.
	direct := msg != nil && c.direct != nil && len(msg) <= maxDirectBody
	reqCtx := ctx
	if !direct {
		reqCtx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
			a.sentBody()
		}})
	}
	req, err := c.newPost(reqCtx, body)
	if err != nil {
		abandon(err)
		c.fail(env.ID, "building the request: "+withoutURL(err).Error())
		return
	}
	c.mu.Lock()
	legacy := c.version
	c.mu.Unlock()
	c.modern.setHeaders(req.Header, out, legacy)
	var resp *http.Response
	if direct && c.direct.takes(req, len(msg)) {
		resp, err = c.direct.roundTrip(req, a.sentBody)
	} else {
		resp, err = c.hc.Do(req)
	}
	if err != nil {
		abandon(withoutURL(err))
	}
	c.answer(ctx, req, resp, err, outf, msg, a)
}

// answer handles what a POST got: the server's response, or err.
func (c *Conn) answer(ctx context.Context, req *http.Request, resp *http.Response, err error, outf func() outbound, msg []byte, a *ack) {
	a.acknowledge()        // acknowledged, or failed
	env := outf().envelope // a streamed message's id may come after its params
	if err != nil {
		if c.ctx.Err() == nil && ctx.Err() == nil {
			c.fail(env.ID, describeNetErr(c.opts.URL, err).Error())
		}
		return
	}
	defer resp.Body.Close()
	isInit := env.Method == string(mcp.MethodInitialize)
	if isInit && resp.StatusCode < 300 {
		c.startSession(resp)
	}
	if c.handleStatus(req, resp, msg, env, isInit) {
		return
	}
	c.handleBody(ctx, resp, env, isInit)
}

// newPost returns a POST of body to the server's URL, parsed once, with
// the session's headers (postHeader).
func (c *Conn) newPost(ctx context.Context, body io.Reader) (*http.Request, error) {
	if c.url == nil {
		req, err := http.NewRequestWithContext(ctx, "POST", c.opts.URL, body)
		if err == nil {
			req.Header = c.postHeader()
		}
		return req, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "", body)
	if err != nil {
		return nil, err
	}
	u := *c.url
	req.URL, req.Host = &u, u.Host
	req.Header = c.postHeader()
	return req, nil
}

// ack is the acknowledgement of one POST, which the message after it
// waits for: done closes once the server acknowledged the message (its
// 202, or the start of its response) or the POST failed, and sent once
// its body is on the wire, from when AckWait runs. Its methods are safe
// for concurrent use: the HTTP client sends the body on a goroutine of its
// own.
type ack struct {
	done, sent         chan struct{}
	doneOnce, sentOnce sync.Once
	// at is when the body was sent; written before sent closes.
	at time.Time
}

func newAck() *ack { return &ack{done: make(chan struct{}), sent: make(chan struct{})} }

func (a *ack) acknowledge() { a.doneOnce.Do(func() { close(a.done) }) }

func (a *ack) sentBody() {
	a.sentOnce.Do(func() {
		a.at = time.Now()
		close(a.sent)
	})
}

// wait returns once the message was acknowledged, once ackWait passed
// after its body was sent, or when ctx ends. Only a message that waits
// arms a timer.
func (a *ack) wait(ctx context.Context, ackWait time.Duration) {
	select {
	case <-a.done:
		return
	case <-ctx.Done():
		return
	case <-a.sent:
	}
	t := time.NewTimer(ackWait - time.Since(a.at))
	defer t.Stop()
	select {
	case <-a.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// getStreamWait bounds how long an initialize answer waits for the GET
// stream's first attempt.
const getStreamWait = 5 * time.Second

// startSession keeps the session id an initialize answer carries, and
// opens the GET stream before the client sees the initialize result: what
// the server sends right after the client's initialized notification (a
// tools/list_changed, say) must have a stream to arrive on.
func (c *Conn) startSession(resp *http.Response) {
	sid := resp.Header.Get(mcp.HeaderSessionID)
	if sid == "" {
		return
	}
	c.mu.Lock()
	c.session = sid
	c.mu.Unlock()
	t := time.NewTimer(getStreamWait)
	defer t.Stop()
	select {
	case <-c.startGetStream():
	case <-c.ctx.Done():
	case <-t.C:
		c.log.Warn("the server's GET stream did not open in time; going on without waiting", "waited", getStreamWait)
	}
}

// handleStatus deals with a response that has no body to read: 202, an
// error status, or the answer of an HTTP+SSE server to a streamable
// initialize. It reports whether it handled the response.
func (c *Conn) handleStatus(req *http.Request, resp *http.Response, msg []byte, env envelope, isInit bool) bool {
	code := resp.StatusCode
	switch {
	case code == http.StatusAccepted:
		return true
	case code == http.StatusNotFound && c.hasSession() && !isInit:
		c.mu.Lock()
		c.session = ""
		c.mu.Unlock()
		c.fail(env.ID, "the server ended the MCP session (HTTP 404 for its session id); reconnect the client so it starts a new session with initialize")
		return true
	case code < 300:
		return false
	}
	se := newHTTPStatusError(req, resp)
	rpc, rpcCode, isRPC := rpcErrorBody(se.Body, env.ID)
	switch {
	case isInit && c.opts.Transport == "" && (code == http.StatusBadRequest || code == http.StatusNotFound || code == http.StatusMethodNotAllowed) &&
		!(isRPC && modernErrorCodes[rpcCode]):
		// Backwards compatibility: an HTTP+SSE server. Switch and resend.
		c.log.Info("the server does not take streamable HTTP; trying the HTTP+SSE transport", "status", code)
		if err := c.startLegacy(); err != nil {
			c.fail(env.ID, err.Error())
			return true
		}
		c.mu.Lock()
		lg := c.legacy
		c.mu.Unlock()
		if msg == nil {
			c.fail(env.ID, "the server speaks only the HTTP+SSE transport, and the bridge cannot send again a message it streamed")
			return true
		}
		if err := lg.post(msg); err != nil {
			c.fail(env.ID, err.Error())
		}
	case isRPC && code >= 400 && !se.Unauthorized():
		// The server's own JSON-RPC error (a modern server's
		// UnsupportedProtocolVersion or HeaderMismatch, say): the client
		// needs its code and data to negotiate, so it passes as it is.
		if !env.isRequest() {
			c.log.Warn("the server refused a notification", "status", code, "code", rpcCode)
			return true
		}
		c.deliver(rpc)
	default:
		c.fail(env.ID, se.Error())
	}
	return true
}

// handleBody delivers a successful POST's response: one JSON message, or
// an event stream that ends with the response to the request.
func (c *Conn) handleBody(ctx context.Context, resp *http.Response, env envelope, isInit bool) {
	mt := mediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		if !env.isRequest() && (env.Method != "" || jsonrpc.HasID(env.ID)) {
			// A notification's or a response's POST is answered with 202
			// and no body (MCP basic/transports). A JSON body some servers
			// send anyway answers nothing the client asked, and relayed it
			// would reach the client as a response to no request of its
			// own: it is dropped. (A batch has no envelope of its own and
			// is answered.)
			n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, DefaultMaxMessage))
			c.log.Debug("dropped the body the server sent in answer to a notification or response", "method", env.Method, "bytes", n)
			return
		}
		ok, err := c.readJSONBody(resp.Body, resp.ContentLength, env, isInit)
		if err != nil {
			c.fail(env.ID, "reading the server's response: "+err.Error())
			return
		}
		if !ok {
			c.fail(env.ID, "the server's response is not JSON; is --url the server's MCP endpoint?")
		}
	case "text/event-stream":
		c.readResponseStream(ctx, resp.Body, env, isInit)
		c.drainStream(resp.Body)
	default:
		c.fail(env.ID, fmt.Sprintf("the server answered with Content-Type %q, not JSON or an event stream; is --url the server's MCP endpoint?", resp.Header.Get("Content-Type")))
	}
}

// drainWait and drainMax bound what drainStream reads of a response
// stream after its response: a server ends the stream at once once it
// answered (MCP basic/transports: it SHOULD close it), so a stream that
// has not ended by then will not end soon.
const (
	drainWait = 100 * time.Millisecond
	drainMax  = 64 << 10
)

// drainStream reads what is left of a POST's event stream once its
// response came, up to drainWait and drainMax: a body closed before its
// end closes its connection with it, and the next POST would dial a new
// one. What it reads is no longer delivered, as the stream's events after
// the response never were; it is logged, without content.
func (c *Conn) drainStream(body io.ReadCloser) {
	t := time.AfterFunc(drainWait, func() { body.Close() })
	n, _ := io.Copy(io.Discard, io.LimitReader(body, drainMax))
	t.Stop()
	if n > 0 {
		c.log.Debug("the server sent more on a response stream after its response; it was not relayed", "bytes", n)
	}
}

// mediaType is the media type of a Content-Type value, lower case, as
// mime.ParseMediaType reads it; the two an MCP server answers with, as
// servers write them, are read without it.
func mediaType(v string) string {
	switch v {
	case "application/json", "text/event-stream":
		return v
	}
	mt, _, _ := mime.ParseMediaType(v)
	return mt
}

func (c *Conn) hasSession() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session != ""
}

// learnVersion keeps the protocol version an initialize result names, for
// the MCP-Protocol-Version header of later requests.
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

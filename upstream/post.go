package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxJSONResponse bounds a POST's application/json response.
const maxJSONResponse = 64 << 20

// post sends msg and handles the response. wrote is closed once the
// request's body is on the wire (or the POST failed before), so the next
// message can follow.
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
	c.handleBody(resp, env, isInit)
}

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
	select {
	case <-c.startGetStream():
	case <-time.After(5 * time.Second):
		c.log.Warn("the server's GET stream did not open within 5s; going on without waiting")
	}
}

// handleStatus deals with a response that has no body to read: 202, an
// error status, or the answer of an HTTP+SSE server to a streamable
// initialize. It reports whether it handled the response.
func (c *Conn) handleStatus(req *http.Request, resp *http.Response, msg []byte, env envelope, isInit bool) bool {
	switch code := resp.StatusCode; {
	case code == http.StatusAccepted:
	case code == http.StatusNotFound && c.hasSession() && !isInit:
		c.mu.Lock()
		c.session = ""
		c.mu.Unlock()
		c.fail(env.ID, "the server ended the MCP session (HTTP 404 for its session id); reconnect the client so it starts a new session with initialize")
	case isInit && c.opts.Transport == "" && (code == http.StatusBadRequest || code == http.StatusNotFound || code == http.StatusMethodNotAllowed):
		// Backwards compatibility: an HTTP+SSE server. Switch and resend.
		c.log.Info("the server does not take streamable HTTP; trying the HTTP+SSE transport", "status", code)
		if err := c.startLegacy(); err != nil {
			c.fail(env.ID, err.Error())
			return true
		}
		c.mu.Lock()
		lg := c.legacy
		c.mu.Unlock()
		if err := lg.post(msg); err != nil {
			c.fail(env.ID, err.Error())
		}
	case code >= 300:
		c.fail(env.ID, newHTTPStatusError(req, resp).Error())
	default:
		return false
	}
	return true
}

// handleBody delivers a successful POST's response: one JSON message, or
// an event stream that ends with the response to the request.
func (c *Conn) handleBody(resp *http.Response, env envelope, isInit bool) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONResponse))
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

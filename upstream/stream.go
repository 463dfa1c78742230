package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
)

// maxResumes bounds how often a POST's response stream is resumed before
// the request fails.
const maxResumes = 5

// readEvents reads the event stream body, calling fn for each event until
// the stream ends or fn returns false. lastID is the stream's last event
// ID so far (Last-Event-ID); it is updated as the stream sets one. The
// error is nil for a stream that ended cleanly or that fn stopped.
func readEvents(body io.Reader, lastID *string, fn func(sse.Event) bool) error {
	r := sse.NewReader(body, sse.Options{LastEventID: *lastID})
	for {
		ev, err := r.Next()
		*lastID = r.LastEventID()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !fn(ev) {
			return nil
		}
	}
}

// isMessage reports whether an event's data is a JSON-RPC message to
// deliver; a priming event (an id and empty data) is not.
func isMessage(data []byte) bool {
	return len(bytes.TrimSpace(data)) > 0 && json.Valid(data)
}

// readResponseStream delivers a POST's SSE stream until the response to
// the request arrives. A stream that drops first is resumed with GET and
// Last-Event-ID; one that cannot be resumed fails the request.
func (c *Conn) readResponseStream(body io.Reader, env envelope, isInit bool) {
	lastID := ""
	answered := !env.isRequest()
	want := jsonrpc.IDKey(env.ID)
	handle := func(ev sse.Event) bool {
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			return true
		}
		if !json.Valid(ev.Data) {
			c.log.Warn("the server sent an event that is not JSON; skipped")
			return true
		}
		if isInit {
			c.learnVersion(ev.Data)
		}
		var related json.RawMessage
		if env.isRequest() {
			related = env.ID
		}
		c.deliverRelated(ev.Data, related)
		var e envelope
		if json.Unmarshal(ev.Data, &e) == nil && e.Method == "" && jsonrpc.IDKey(e.ID) == want {
			answered = true
			return false
		}
		return true
	}
	err := readEvents(body, &lastID, handle)
	for attempt := 0; !answered && c.ctx.Err() == nil; attempt++ {
		if lastID == "" || attempt >= maxResumes {
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
		err = readEvents(resp.Body, &lastID, handle)
		resp.Body.Close()
	}
}

// get opens a GET event stream, resuming after lastID when set. A status
// other than 200 is an *HTTPStatusError.
func (c *Conn) get(lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(c.ctx, "GET", c.opts.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(mcp.HeaderLastEventID, lastID)
	}
	c.headers(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, fmt.Errorf("GET stream: %w", newHTTPStatusError(req, resp))
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
	go c.keepGetStream(ready)
	return ready
}

// keepGetStream reads the GET stream, reopening it after each drop with
// Last-Event-ID, until Close or until the server says it offers none
// (405, as the transport spec allows). It closes ready after the first
// attempt.
func (c *Conn) keepGetStream(ready chan struct{}) {
	defer c.wg.Done()
	var once sync.Once
	first := func() { once.Do(func() { close(ready) }) }
	defer first()
	lastID, backoff := "", 200*time.Millisecond
	for c.ctx.Err() == nil {
		resp, err := c.get(lastID)
		first()
		if err != nil {
			if hasStatus(err, http.StatusMethodNotAllowed) {
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
		err = readEvents(resp.Body, &lastID, func(ev sse.Event) bool {
			if isMessage(ev.Data) {
				c.deliver(ev.Data)
			}
			return true
		})
		resp.Body.Close()
		if err != nil && c.ctx.Err() == nil {
			c.log.Info("the GET stream broke; reopening it", "err", err)
		}
	}
}

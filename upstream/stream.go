package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
)

// Event streams: a POST's response stream and its resumption, and the
// standing GET stream (MCP basic/transports, streamable HTTP: "Sending
// Messages to the Server", "Listening for Messages from the Server",
// "Resumability and Redelivery"). Every stream is read by internal/sse;
// an event whose data passes DefaultMaxMessage reaches the proxy as a
// stream (relayEvent), as a large JSON body does, so an event of any size
// passes in bounded memory. Reopening a stream is paced by the server's
// retry field and a backoff (reconnect.go).

// readEvents reads one response's event stream, calling fn for each
// event until the stream ends or fn returns false; fn reads the Rest of
// an event handed over as a stream before it returns. above is the size
// past which an event's data is handed over so. lastID is the stream's
// last event ID so far (Last-Event-ID), updated as the stream sets one; a
// retry the stream sets becomes the session's reconnection time. The
// error is nil for a stream that ended cleanly or that fn stopped.
func (c *Conn) readEvents(body io.Reader, lastID *string, above int, fn func(sse.Event) bool) error {
	r := sse.NewReader(body, sse.Options{LastEventID: *lastID, StreamAbove: above})
	defer func() {
		*lastID = r.LastEventID()
		if d, ok := r.Retry(); ok {
			c.retry.set(d)
		}
	}()
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !fn(ev) {
			return nil
		}
		if ev.Rest != nil && c.ctx.Err() != nil {
			// Close cut the relay of a streamed event short: the proxy
			// may still be reading its Rest, so r is no longer ours.
			return nil
		}
	}
}

// relayEvent hands the JSON-RPC message an event carries to the reader,
// with the id of the request whose response stream carried it (related;
// nil for none), and reads the message's envelope into env when env is
// not nil. It reports false for an event that carries none: a priming
// event (no data), or data that is not JSON, which is logged and skipped;
// and for a streamed event whose relay Close cut short.
// An event handed over as a stream (sse.Event.Rest) is relayed as one, as
// a large JSON body is (deliverStream): its head must begin a JSON value,
// and its envelope is read as its bytes pass on to the proxy. Either way
// the message is one line (oneLine).
func (c *Conn) relayEvent(ev sse.Event, related json.RawMessage, env *envelope) bool {
	if ev.Rest == nil {
		msg := bytes.TrimSpace(ev.Data)
		if len(msg) == 0 {
			return false
		}
		var w jsonrpc.Whole
		if _, valid := jsonrpc.ReadWhole(msg, &jsonrpc.WholeOptions{}, &w); !valid {
			c.log.Warn("the server sent an event that is not JSON; skipped")
			return false
		}
		if env != nil {
			*env = envelope{ID: w.ID, Method: jsonrpc.DecodeString(w.Method)}
		}
		c.deliverRelated(oneLine(msg), related)
		return true
	}
	sc := jsonrpc.NewScanner(jsonrpc.ScanOptions{})
	sc.Write(ev.Data)
	if err := sc.Err(); err != nil {
		c.log.Warn("the server sent a large event that is not JSON; skipped", "err", err)
		return false // the reader discards the rest
	}
	var rest io.Reader = oneLineReader{ev.Rest}
	if env != nil {
		rest = io.TeeReader(rest, sc)
	}
	if !c.deliverStream(oneLine(ev.Data), rest, related) {
		return false // Close: the proxy may still be writing to sc
	}
	if env != nil {
		e := sc.Envelope()
		*env = envelope{ID: e.ID, Method: e.Method}
	}
	return true
}

// responseStream is what readResponseStream knows of one request's
// response stream.
type responseStream struct {
	c       *Conn
	env     envelope
	want    string          // the request's id key
	related json.RawMessage // the request's id; nil for a notification
	isInit  bool
	// list says the request is a modern tools/list, whose result the
	// transport reads whole (see readJSONBody); above is the size past
	// which an event is streamed.
	list  bool
	above int

	answered  bool // the response arrived (or the request was answered otherwise)
	delivered bool // the current connection delivered a message
}

// handle delivers one event; it returns false once the response arrived.
func (rs *responseStream) handle(ev sse.Event) bool {
	if ev.Rest != nil && rs.list && rs.refuseList(ev) {
		return false
	}
	if rs.isInit && ev.Rest == nil {
		rs.c.learnVersion(ev.Data)
	}
	var e envelope
	if !rs.c.relayEvent(ev, rs.related, &e) {
		return true
	}
	rs.delivered = true
	if e.Method == "" && jsonrpc.IDKey(e.ID) == rs.want {
		rs.answered = true
		return false
	}
	return true
}

// refuseList answers a modern tools/list whose result is over what the
// transport reads whole with an error naming the limit, as readJSONBody
// does; it reports false, changing nothing, for an event whose head shows
// a request or notification, which is relayed as a stream.
func (rs *responseStream) refuseList(ev sse.Event) bool {
	sc := jsonrpc.NewScanner(jsonrpc.ScanOptions{})
	sc.Write(ev.Data)
	if sc.Envelope().Method != "" {
		return false
	}
	rs.c.modern.forgetList(rs.env.ID)
	rs.c.fail(rs.env.ID, listTooLarge(rs.above))
	rs.answered = true
	return true // the reader discards the rest
}

// outcome says how the connection just read went.
func (rs *responseStream) outcome() outcome {
	if rs.delivered {
		return delivered
	}
	return idle
}

// readResponseStream delivers a POST's event stream until the response to
// the request arrives. A stream that ends first is resumed with GET and
// Last-Event-ID, paced as reconnect.go says, for as long as the server
// serves the resumptions: the request fails when the stream set no event
// ID to resume with, when the server refuses a resumption for good (an
// HTTP status that is not transient), or after maxResumeRefusals attempts
// in a row that got no stream. Resuming ends quietly at Close, when ctx
// ends (a modern request the client cancelled), and when the client
// cancels the request (notifications/cancelled): nobody waits for the
// response then.
func (c *Conn) readResponseStream(ctx context.Context, body io.Reader, env envelope, isInit bool) {
	rs := &responseStream{c: c, env: env, want: jsonrpc.IDKey(env.ID), isInit: isInit, answered: !env.isRequest(), above: DefaultMaxMessage}
	if env.isRequest() {
		rs.related = env.ID
	}
	if rs.list = c.modern.awaitsList(env.ID); rs.list {
		rs.above = max(rs.above, c.opts.MaxWholeMessage)
	}
	ctx, stop := c.resumes.add(ctx, env.ID)
	defer stop()
	lastID := ""
	err := c.readEvents(body, &lastID, rs.above, rs.handle)
	p := c.newPacer()
	p.record(rs.outcome())
	for attempt := 1; !rs.answered && ctx.Err() == nil; attempt++ {
		if lastID == "" || p.refusals >= maxResumeRefusals || permanent(err) {
			c.fail(env.ID, resumeFailure(lastID, p.refusals, err))
			return
		}
		d := p.delay()
		c.log.Debug("the response stream ended before the response; resuming it", "attempt", attempt, "after", d, "err", err)
		if sleep(ctx, d) != nil {
			return
		}
		resp, gerr := c.get(ctx, lastID)
		if gerr != nil {
			err = gerr
			p.record(refused)
			continue
		}
		rs.delivered = false
		err = c.readEvents(resp.Body, &lastID, rs.above, rs.handle)
		resp.Body.Close()
		p.record(rs.outcome())
	}
}

// resumeFailure says why a response stream cannot be resumed, for the
// error its request is answered with.
func resumeFailure(lastID string, refusals int, err error) string {
	const advice = "; the server may have stopped answering"
	switch {
	case lastID == "" && err != nil:
		return "the response stream broke: " + err.Error() + advice
	case lastID == "":
		return "the server closed the response stream before answering" + advice
	case permanent(err):
		return "resuming the response stream failed: " + err.Error()
	default:
		return fmt.Sprintf("resuming the response stream failed %d times in a row: %v%s", refusals, err, advice)
	}
}

// resumeSet holds, by request id, the stop function of each response
// stream that may be resumed, so the client's notifications/cancelled for
// the request stops its resumption (and closes a resumed stream then
// open). The POST's own stream is not closed: under 2025 revisions a
// closed stream is not a cancellation, and the server may still send on
// it. It is safe for concurrent use.
type resumeSet struct {
	// mu guards stops.
	mu    sync.Mutex
	stops map[string]*context.CancelFunc
}

// add registers the request with id and returns the context its
// resumption runs in, and the function that ends and forgets it.
func (s *resumeSet) add(ctx context.Context, id json.RawMessage) (context.Context, func()) {
	ctx, stop := context.WithCancel(ctx)
	if !jsonrpc.HasID(id) {
		return ctx, stop
	}
	k, entry := jsonrpc.IDKey(id), &stop
	s.mu.Lock()
	if s.stops == nil {
		s.stops = map[string]*context.CancelFunc{}
	}
	s.stops[k] = entry
	s.mu.Unlock()
	return ctx, func() {
		stop()
		s.mu.Lock()
		if s.stops[k] == entry { // a reused id may have replaced it
			delete(s.stops, k)
		}
		s.mu.Unlock()
	}
}

// cancel stops resuming the stream of the request a client's
// notifications/cancelled names.
func (s *resumeSet) cancel(o outbound) {
	if o.Method != string(mcp.MethodNotificationCancelled) || len(o.cancels) == 0 {
		return
	}
	s.mu.Lock()
	stop := s.stops[jsonrpc.IDKey(o.cancels)]
	s.mu.Unlock()
	if stop != nil {
		(*stop)()
	}
}

// get opens a GET event stream, resuming after lastID when set. A status
// other than 200 is an *HTTPStatusError.
func (c *Conn) get(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.opts.URL, nil)
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
		return nil, fmt.Errorf("GET stream: %w", withoutURL(err))
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

// keepGetStream reads the GET stream, reopening it with Last-Event-ID
// each time it ends, paced as reconnect.go says, until Close or until the
// server says it offers none (405, as the transport spec allows). It
// closes ready after the first attempt.
func (c *Conn) keepGetStream(ready chan struct{}) {
	defer c.wg.Done()
	var once sync.Once
	first := func() { once.Do(func() { close(ready) }) }
	defer first()
	lastID := ""
	p := c.newPacer()
	for {
		resp, err := c.get(c.ctx, lastID)
		first()
		switch {
		case c.ctx.Err() != nil:
			return
		case hasStatus(err, http.StatusMethodNotAllowed):
			c.log.Debug("the server offers no GET stream")
			return
		case err != nil:
			c.log.Debug("opening the GET stream failed; trying again", "err", err)
			p.record(refused)
		default:
			got := idle
			err = c.readEvents(resp.Body, &lastID, DefaultMaxMessage, func(ev sse.Event) bool {
				if c.relayEvent(ev, nil, nil) {
					got = delivered
				}
				return true
			})
			resp.Body.Close()
			if err != nil && c.ctx.Err() == nil {
				c.log.Info("the GET stream broke; reopening it", "err", err)
			}
			p.record(got)
		}
		if sleep(c.ctx, p.delay()) != nil {
			return
		}
	}
}

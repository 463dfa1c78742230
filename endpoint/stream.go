package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// sseHeartbeat is how often an idle stream gets a ": ping" comment.
const sseHeartbeat = 15 * time.Second

// serveStream is GET /stream (AEP-0003 §3.3): filter, capture, from,
// Last-Event-ID and live=0.
func (e *Endpoint) serveStream(w http.ResponseWriter, r *http.Request) {
	req, err := parseStreamQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid-filter", err.Error())
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	// Authenticated and bodiless: the stream is long-lived, with no read
	// deadline; its writes have theirs.
	if !streamReady(w, r, false, time.Time{}) {
		return
	}
	if !e.enter() {
		writeError(w, http.StatusServiceUnavailable, "closing", "the endpoint is shutting down; reconnect to another or later")
		return
	}
	defer e.active.Done()
	ended := make(chan string, 1)
	if o, ok := operatorOf(r); ok {
		untrack, ok := e.track(o, func(reason string) {
			select {
			case ended <- reason:
			default:
			}
		})
		if !ok {
			unauthorized(w)
			return
		}
		defer untrack()
	}
	sub, exhausted := subscribeAs(principalOf(r), e.opts.Hub, req)
	defer sub.Close()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	for _, x := range exhausted {
		fmt.Fprintf(w, ": replay-exhausted %s %d:%d\n\n", x.Session, x.Earliest.Epoch, x.Earliest.Seq)
	}
	// The counts of the subscribed frame (see subscribe), as a comment.
	open, replay := sub.Counts()
	fmt.Fprintf(w, ": subscribed open=%d replay=%d\n\n", open, replay)
	fl.Flush()
	st := &sseStream{w: w, rc: http.NewResponseController(w), ceiling: req.ceiling}
	defer st.rc.SetWriteDeadline(time.Time{}) // the connection may serve another request
	if r.URL.Query().Get("live") == "0" {
		st.replay(sub)
		return
	}
	st.live(r.Context(), e.base, ended, sub)
}

// parseStreamQuery reads a stream request: from takes precedence over
// Last-Event-ID (AEP-0003 §3.3).
func parseStreamQuery(r *http.Request) (subscription, error) {
	q := r.URL.Query()
	var from json.RawMessage
	if f := q.Get("from"); f == "all" {
		from = aep.FromAll
	} else if f != "" {
		from = json.RawMessage(f)
	}
	req, err := parseSubscription([]byte(q.Get("filter")), q.Get("capture"), from)
	if err != nil {
		return subscription{}, err
	}
	if id := r.Header.Get("Last-Event-ID"); from == nil && id != "" {
		p, err := parseEventID(id)
		if err != nil {
			return subscription{}, err
		}
		req.from.Positions = []bus.Position{p}
	}
	return req, nil
}

// sseStream writes deliveries as server-sent events.
type sseStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	ceiling aep.Capture
}

// flush sends what is written, within writeWait: a consumer that stops
// reading ends its stream instead of holding its subscription forever.
func (st *sseStream) flush() bool {
	st.rc.SetWriteDeadline(time.Now().Add(writeWait))
	return st.rc.Flush() == nil
}

// backlog writes the open questions and the replay the subscription
// starts with; it returns false when the consumer is gone.
func (st *sseStream) backlog(sub *bus.Subscription) bool {
	n := 0
	for d := range sub.Backlog() {
		st.event(d)
		if n++; n%64 == 0 && !st.flush() {
			return false
		}
	}
	return st.flush()
}

// event writes one delivery, down-leveled to the stream's ceiling; its id
// is {session}:{epoch}:{seq} when it has a position. Whatever the event
// holds, it cannot end a field early or start another (AEP-0003 §3.3):
// id and event fields that would hold a line break or NUL are left out
// (with a comment saying so), and every line of the data gets its own
// "data:" prefix.
func (st *sseStream) event(d *bus.Delivery) {
	b, err := downlevel(d, st.ceiling)
	if err != nil {
		return
	}
	if d.Event.Seq != nil {
		writeField(st.w, "id", fmt.Sprintf("%s:%d:%d", d.Event.Session, d.Event.EpochOrZero(), *d.Event.Seq))
	}
	writeField(st.w, "event", d.Event.Type)
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			i = len(b)
		}
		io.WriteString(st.w, "data: ")
		st.w.Write(b[:i])
		io.WriteString(st.w, "\n")
		b = b[i:]
		if bytes.HasPrefix(b, []byte("\r\n")) {
			b = b[2:]
		} else if len(b) > 0 {
			b = b[1:]
		}
	}
	io.WriteString(st.w, "\n")
}

// writeField writes one SSE field, or a comment in its place when the value
// holds a character that would break the framing.
func writeField(w io.Writer, name, value string) {
	if strings.ContainsAny(value, "\r\n\x00") {
		fmt.Fprintf(w, ": %s left out: it holds a line break or NUL\n", name)
		return
	}
	fmt.Fprintf(w, "%s: %s\n", name, value)
}

// replay writes what the subscription starts with and what it already
// holds, then a marker (live=0). A subscription closed for slowness ends
// the stream without the marker, so the consumer knows the replay is
// incomplete.
func (st *sseStream) replay(sub *bus.Subscription) {
	if !st.backlog(sub) {
		return
	}
	for done := false; !done; {
		select {
		case d, ok := <-sub.C:
			if !ok {
				return
			}
			st.event(d)
		default:
			done = true
		}
	}
	fmt.Fprint(st.w, ": replay-complete\n\n")
	st.flush()
}

// live writes the backlog, then deliveries as they come, with a
// heartbeat, until the client goes, the subscription ends, or the
// endpoint ends the stream with a reason on ended (an operator's access
// was revoked), which it writes as a last comment.
func (st *sseStream) live(ctx, base context.Context, ended <-chan string, sub *bus.Subscription) {
	if !st.backlog(sub) {
		return
	}
	tick := time.NewTicker(sseHeartbeat)
	defer tick.Stop()
	for {
		select {
		case d, ok := <-sub.C:
			if !ok {
				// Too slow: end the stream so the consumer resumes exactly.
				return
			}
			st.event(d)
			if !st.flush() {
				return
			}
		case <-tick.C:
			fmt.Fprint(st.w, ": ping\n\n")
			if !st.flush() {
				return
			}
		case <-ctx.Done():
			return
		case <-base.Done():
			return // the endpoint is closing: the consumer resumes elsewhere or later
		case reason := <-ended:
			writeField(st.w, ": closing", reason)
			st.flush()
			return
		}
	}
}

// parseEventID reads an SSE id, {session}:{epoch}:{seq}.
func parseEventID(id string) (bus.Position, error) {
	i := strings.LastIndex(id, ":")
	j := strings.LastIndex(id[:max(i, 0)], ":")
	if i < 0 || j < 0 {
		return bus.Position{}, fmt.Errorf("Last-Event-ID %q is not {session}:{epoch}:{seq}", id)
	}
	epoch, err1 := strconv.ParseInt(id[j+1:i], 10, 64)
	seq, err2 := strconv.ParseInt(id[i+1:], 10, 64)
	if err1 != nil || err2 != nil || id[:j] == "" || epoch < 0 || seq < 0 {
		return bus.Position{}, fmt.Errorf("Last-Event-ID %q is not {session}:{epoch}:{seq}", id)
	}
	return bus.Position{Session: id[:j], Epoch: epoch, Seq: seq}, nil
}

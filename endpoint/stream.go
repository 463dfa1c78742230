package endpoint

import (
	"encoding/json"
	"fmt"
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
	q := r.URL.Query()
	var from json.RawMessage
	if f := q.Get("from"); f == "all" {
		from = aep.FromAll
	} else if f != "" {
		from = json.RawMessage(f)
	}
	req, err := parseSubscription([]byte(q.Get("filter")), q.Get("capture"), from)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid-filter", err.Error())
		return
	}
	if id := r.Header.Get("Last-Event-ID"); from == nil && id != "" {
		p, err := parseEventID(id)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid-filter", err.Error())
			return
		}
		req.from.Positions = []bus.Position{p}
	}
	live := q.Get("live") != "0"
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	sub, exhausted := e.opts.Hub.SubscribeFrom(req.filter.Match, req.from, bus.DefaultQueue)
	defer sub.Close()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	for _, x := range exhausted {
		fmt.Fprintf(w, ": replay-exhausted %s %d:%d\n\n", x.Session, x.Earliest.Epoch, x.Earliest.Seq)
	}
	fl.Flush()
	write := func(d *bus.Delivery) bool {
		b, err := downlevel(d, req.ceiling)
		if err != nil {
			return true
		}
		if d.Event.Seq != nil {
			fmt.Fprintf(w, "id: %s:%d:%d\n", d.Event.Session, d.Event.EpochOrZero(), *d.Event.Seq)
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", d.Event.Type, b)
		return true
	}
	if !live {
		// Replay only: what the subscription already holds, then a marker.
		for {
			select {
			case d := <-sub.C:
				write(d)
				continue
			default:
			}
			break
		}
		fmt.Fprint(w, ": replay-complete\n\n")
		fl.Flush()
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
			write(d)
			fl.Flush()
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
			fl.Flush()
		case <-r.Context().Done():
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

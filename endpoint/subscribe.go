package endpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// Limits of one connection's subscriptions.
const (
	// maxSubscriptions bounds the subscriptions of one connection.
	maxSubscriptions = 64
	// maxPositions bounds the resume positions of one request.
	maxPositions = bus.DefaultReplaySessions
	// subscriptionQueue is each subscription's live queue in the hub. The
	// backlog does not count against it.
	subscriptionQueue = 4096
)

type socketSub struct {
	id      string
	sub     *bus.Subscription
	ceiling aep.Capture
	// last holds the last delivered position per session, for closing.
	last map[string]bus.Position
}

// limitError is a request over an endpoint limit (limit-exceeded).
type limitError struct{ detail string }

func (e *limitError) Error() string { return e.detail }

// refusalCode is the error frame code for a malformed or over-limit request.
func refusalCode(err error) string {
	var le *limitError
	if errors.As(err, &le) {
		return "limit-exceeded"
	}
	return "invalid-filter"
}

// subscription is a parsed subscribe frame or SSE query.
type subscription struct {
	filter  *aep.Filter
	ceiling aep.Capture
	from    bus.From
}

// parseSubscription reads the filter, capture ceiling and from of a
// subscribe frame or an SSE query (AEP-0003 §3.3, §6.5).
func parseSubscription(filter json.RawMessage, capture string, from json.RawMessage) (subscription, error) {
	var out subscription
	var err error
	if out.filter, err = aep.ParseFilter(filter); err != nil {
		return subscription{}, err
	}
	if capture != "" {
		if out.ceiling, err = aep.ParseCapture(capture); err != nil {
			return subscription{}, fmt.Errorf("capture: %w", err)
		}
	}
	if out.from, err = parseFrom(from); err != nil {
		return subscription{}, err
	}
	return out, nil
}

func (s *socket) subscribe(f aep.Frame) {
	if f.ID == "" {
		s.errorFrame("", "", "invalid-filter", "subscribe needs an id")
		return
	}
	req, err := parseSubscription(f.Filter, f.Capture, f.From)
	if err != nil {
		s.errorFrame(f.ID, "", refusalCode(err), err.Error())
		return
	}
	s.mu.Lock()
	_, dup := s.subs[f.ID]
	full := len(s.subs) >= maxSubscriptions
	s.mu.Unlock()
	switch {
	case dup:
		s.errorFrame(f.ID, "", "invalid-filter", "a subscription with this id is already active")
		return
	case full:
		s.errorFrame(f.ID, "", "limit-exceeded", fmt.Sprintf("at most %d subscriptions per connection", maxSubscriptions))
		return
	}
	sub, exhausted := subscribeAs(s.e.access.Principal(s.auth), s.e.opts.Hub, req)
	ss := &socketSub{id: f.ID, sub: sub, ceiling: req.ceiling, last: map[string]bus.Position{}}
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		sub.Close() // the connection is closing: nothing more is delivered
		return
	}
	// The frames go out before the forwarder hands over its first event
	// (the writer sends replies first): subscribed, then replay-exhausted
	// ahead of any replayed event (AEP-0003 §5).
	open, replay := sub.Counts()
	s.send(aep.Subscribed{Type: aep.FrameSubscribed, ID: f.ID, Open: open, Replay: replay})
	for _, x := range exhausted {
		s.send(aep.ReplayExhausted{Type: aep.FrameReplayExhausted, Sub: f.ID, Session: x.Session,
			Earliest: aep.Earliest{Epoch: x.Earliest.Epoch, Seq: x.Earliest.Seq}})
	}
	s.subs[f.ID] = ss
	s.wg.Add(1)
	s.fwg.Add(1)
	s.mu.Unlock()
	go s.forward(ss)
}

// forward moves one subscription's deliveries to the connection: its
// backlog (open questions, then replay), then live events. It waits for
// room in the connection's queue: backpressure is the hub's, which closes a
// subscription whose live queue overflows with a reason (AEP-0003 §8.4);
// the backlog never counts against that queue.
func (s *socket) forward(ss *socketSub) {
	defer s.wg.Done()
	defer s.fwg.Done()
	for d := range ss.sub.Backlog() {
		if !s.deliver(ss, d) {
			return
		}
	}
	for {
		select {
		case d, ok := <-ss.sub.C:
			if !ok {
				if err := ss.sub.Err(); err != nil {
					s.shutdown(err.Error())
				}
				return
			}
			if !s.deliver(ss, d) {
				return
			}
		case <-s.done:
			return
		}
	}
}

// deliver queues one delivery, down-leveled to the subscription's ceiling,
// and records its position; it returns false once the connection is done.
func (s *socket) deliver(ss *socketSub, d *bus.Delivery) bool {
	b, err := downlevel(d, ss.ceiling)
	if err != nil {
		return true
	}
	select {
	case s.out <- b:
	case <-s.done:
		return false
	}
	if d.Event.Seq != nil {
		s.mu.Lock()
		ss.last[d.Event.Session] = bus.Position{Session: d.Event.Session, Epoch: d.Event.EpochOrZero(), Seq: *d.Event.Seq}
		s.mu.Unlock()
	}
	return true
}

func (s *socket) unsubscribe(id string) {
	s.mu.Lock()
	ss, ok := s.subs[id]
	delete(s.subs, id)
	s.mu.Unlock()
	if ok {
		ss.sub.Close()
	}
	s.send(aep.Ref{Type: aep.FrameUnsubscribed, ID: id})
}

// parseFrom reads a subscribe or SSE from member: "all", or an array of
// {session, epoch, seq}.
func parseFrom(raw json.RawMessage) (bus.From, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return bus.From{}, nil
	}
	var all string
	if json.Unmarshal(raw, &all) == nil {
		if all == "all" {
			return bus.From{All: true}, nil
		}
		return bus.From{}, fmt.Errorf(`from is "all" or an array of {session, epoch, seq}`)
	}
	var ps []struct {
		Session *string `json:"session"`
		Epoch   *int64  `json:"epoch"`
		Seq     *int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &ps); err != nil {
		return bus.From{}, fmt.Errorf(`from is "all" or an array of {session, epoch, seq}`)
	}
	if len(ps) > maxPositions {
		return bus.From{}, &limitError{fmt.Sprintf("at most %d resume positions per request", maxPositions)}
	}
	var out bus.From
	for _, p := range ps {
		if p.Session == nil || *p.Session == "" || p.Seq == nil || *p.Seq < 0 || (p.Epoch != nil && *p.Epoch < 0) {
			return bus.From{}, fmt.Errorf("every from position needs session, a non-negative seq and epoch")
		}
		e := int64(0)
		if p.Epoch != nil {
			e = *p.Epoch
		}
		out.Positions = append(out.Positions, bus.Position{Session: *p.Session, Epoch: e, Seq: *p.Seq})
	}
	return out, nil
}

// subscribeAs subscribes for p to what req asks, within what p may see
// (visible), and returns the resume positions older than the buffer of
// the sessions p sees only: reporting another's would tell that it
// exists.
func subscribeAs(p authority.Principal, hub *bus.Hub, req subscription) (*bus.Subscription, []bus.Exhausted) {
	sub, exhausted := hub.SubscribeFrom(visible(p, hub, req.filter.Match), req.from, subscriptionQueue)
	return sub, slices.DeleteFunc(exhausted, func(x bus.Exhausted) bool { return !p.SeesSession(x.Session, hub) })
}

// visible narrows a subscription's filter to what p may see, on every
// surface (live, replay and the open-question snapshot alike); it adds
// nothing for a principal that sees everything.
func visible(p authority.Principal, hub *bus.Hub, match bus.Filter) bus.Filter {
	sees := p.Filter(hub)
	if sees == nil {
		return match
	}
	return func(ev *aep.Event) bool { return sees(ev) && match(ev) }
}

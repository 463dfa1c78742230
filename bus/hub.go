package bus

import (
	"container/list"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Delivery is one event as a subscriber receives it: the event and its
// exact encoding.
type Delivery struct {
	Event aep.Event
	Raw   []byte
}

// Filter selects the events a subscriber wants. Nil selects every event.
type Filter func(ev *aep.Event) bool

// DefaultQueue is a subscriber's queue length when none is given.
const DefaultQueue = 1024

// Hub fans events out to in-process subscribers. Publishing never blocks:
// each subscriber has a bounded queue, and when it is full a debug or info
// event is dropped for that subscriber and counted, while a notice-or-above
// event that does not fit closes the subscription with a reason, so nothing
// that matters is ever dropped silently (AEP-0001 §8.1, AEP-0003 §8.4).
//
// A Hub is safe for concurrent use.
type Hub struct {
	perSession, sessions int

	// mu guards subs, rings and lru.
	mu    sync.Mutex
	subs  map[*Subscription]struct{}
	rings map[string]*ring
	lru   *list.List // of *ring, most recently written at the front
}

// NewHub returns an empty hub with the default replay buffers.
func NewHub() *Hub { return NewHubSize(DefaultReplayPerSession, DefaultReplaySessions) }

// NewHubSize returns a hub that keeps perSession events for each of at most
// sessions sessions, evicting the least recently written session.
func NewHubSize(perSession, sessions int) *Hub {
	return &Hub{perSession: perSession, sessions: sessions, subs: map[*Subscription]struct{}{},
		rings: map[string]*ring{}, lru: list.New()}
}

// ReplayDepth returns the per-session replay depth, for advertisement.
func (h *Hub) ReplayDepth() int { return h.perSession }

// record adds a session-scoped event to its session's replay buffer.
func (h *Hub) record(d *Delivery) {
	if d.Event.Session == "" {
		return
	}
	k := sessionKey(&d.Event)
	r, ok := h.rings[k]
	if !ok {
		r = &ring{key: k, session: d.Event.Session, ids: map[string]bool{}}
		h.rings[k] = r
		r.elem = h.lru.PushFront(r)
		for h.lru.Len() > h.sessions {
			old := h.lru.Back().Value.(*ring)
			h.lru.Remove(old.elem)
			delete(h.rings, old.key)
		}
	} else {
		h.lru.MoveToFront(r.elem)
	}
	r.add(d, h.perSession)
}

// Subscription is one subscriber's queue. Read C until it is closed, then
// Err says why (nil after Close).
type Subscription struct {
	// C delivers events in publish order.
	C <-chan *Delivery

	hub    *Hub
	c      chan *Delivery
	filter Filter

	// mu guards closed, err and dropped.
	mu      sync.Mutex
	closed  bool
	err     error
	dropped int
}

// ErrSlowSubscriber is the reason a subscription is closed when its queue
// is full and a notice-or-above event must be delivered.
type ErrSlowSubscriber struct{ Dropped int }

func (e ErrSlowSubscriber) Error() string {
	return "subscriber too slow: its queue is full and a notice-or-above event could not be delivered; resubscribe from the last position seen"
}

// Subscribe adds a subscriber with a queue of n events (0 means DefaultQueue).
func (h *Hub) Subscribe(f Filter, n int) *Subscription {
	if n <= 0 {
		n = DefaultQueue
	}
	c := make(chan *Delivery, n)
	s := &Subscription{C: c, c: c, hub: h, filter: f}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Write buffers an event for replay and publishes it to every matching
// subscriber.
func (h *Hub) Write(ev aep.Event, raw []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := &Delivery{Event: ev, Raw: raw}
	h.record(d)
	h.fanOutLocked(d)
	return nil
}

// fanOutLocked hands d to every matching subscriber. Subscribers share the
// delivery; it is never mutated after publication.
func (h *Hub) fanOutLocked(d *Delivery) {
	ev := &d.Event
	for s := range h.subs {
		if s.filter != nil && !s.filter(ev) {
			continue
		}
		select {
		case s.c <- d:
		default:
			if ev.EffectiveSeverity() < aep.SeverityNotice {
				s.mu.Lock()
				s.dropped++
				s.mu.Unlock()
				continue
			}
			s.mu.Lock()
			s.err = ErrSlowSubscriber{Dropped: s.dropped}
			s.mu.Unlock()
			h.removeLocked(s)
		}
	}
}

// Redeliver publishes an already-published event again (live fan-out
// forwards redelivery; the buffer keeps one copy).
func (h *Hub) Redeliver(ev aep.Event, raw []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fanOutLocked(&Delivery{Event: ev, Raw: raw})
	return nil
}

// From says where a subscription starts: live only (the zero value), after
// given positions, or every buffered event (All).
type From struct {
	All       bool
	Positions []Position
}

// SubscribeFrom adds a subscriber whose queue starts with the buffered
// events the request selects (filtered), atomically with live delivery, so
// nothing falls between replay and live. It reports positions that predate
// the buffer.
func (h *Hub) SubscribeFrom(f Filter, from From, n int) (*Subscription, []Exhausted) {
	if n <= 0 {
		n = DefaultQueue
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var backlog []*Delivery
	var exhausted []Exhausted
	switch {
	case from.All:
		for e := h.lru.Back(); e != nil; e = e.Prev() {
			backlog = append(backlog, e.Value.(*ring).items...)
		}
	default:
		for _, p := range from.Positions {
			for _, r := range h.rings {
				if r.session != p.Session {
					continue
				}
				items, ex := r.after(p)
				if ex {
					first, _ := r.earliest()
					exhausted = append(exhausted, Exhausted{Session: p.Session, Earliest: first})
				}
				backlog = append(backlog, items...)
			}
		}
	}
	kept := backlog[:0]
	for _, d := range backlog {
		if f == nil || f(&d.Event) {
			kept = append(kept, d)
		}
	}
	c := make(chan *Delivery, len(kept)+n)
	for _, d := range kept {
		c <- d
	}
	s := &Subscription{C: c, c: c, hub: h, filter: f}
	h.subs[s] = struct{}{}
	return s, exhausted
}

// Close ends every subscription.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		h.removeLocked(s)
	}
}

func (h *Hub) removeLocked(s *Subscription) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.c)
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.removeLocked(s)
}

// Err returns why the subscription ended, or nil.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Dropped returns how many debug/info events were dropped for this
// subscriber because its queue was full.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

package bus

import (
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
	// mu guards subs.
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[*Subscription]struct{}{}} }

// Subscription is one subscriber's queue. Read C until it is closed, then
// Err says why (nil after Close).
type Subscription struct {
	// C delivers events in publish order.
	C <-chan Delivery

	hub    *Hub
	c      chan Delivery
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
	c := make(chan Delivery, n)
	s := &Subscription{C: c, c: c, hub: h, filter: f}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Write publishes an event to every matching subscriber.
func (h *Hub) Write(ev aep.Event, raw []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.filter != nil && !s.filter(&ev) {
			continue
		}
		select {
		case s.c <- Delivery{Event: ev, Raw: raw}:
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
	return nil
}

// Redeliver publishes an already-published event again.
func (h *Hub) Redeliver(ev aep.Event, raw []byte) error { return h.Write(ev, raw) }

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

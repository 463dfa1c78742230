package bus

import (
	"container/list"
	"fmt"
	"iter"
	"math"
	"strings"
	"sync"
	"time"

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

// DefaultQueue is a subscriber's live queue length when none is given.
const DefaultQueue = 1024

// DefaultOpenBytes bounds the open questions held when one more arrives
// from outside the process.
const DefaultOpenBytes = 64 << 20

// HubOptions bound a Hub's memory. A zero field means its default; a
// negative one means no bound (for measuring an unbounded hub only).
type HubOptions struct {
	// ReplayPerSession is each session's replay depth in events, the
	// depth the endpoint advertises. 0 means DefaultReplayPerSession.
	ReplayPerSession int
	// ReplaySessions bounds the sessions that have a replay buffer. 0
	// means DefaultReplaySessions.
	ReplaySessions int
	// ReplaySessionBytes bounds one session's buffer in bytes. 0 means
	// DefaultReplaySessionBytes.
	ReplaySessionBytes int64
	// ReplayBytes and ReplayEvents bound all buffers together. 0 means
	// DefaultReplayBytes and DefaultReplayEvents.
	ReplayBytes  int64
	ReplayEvents int
	// OpenBytes bounds the open questions held when a question arrives
	// from outside the process (Ingest refuses it beyond); questions of
	// the process's own sessions are always kept. 0 means
	// DefaultOpenBytes.
	OpenBytes int64
	// OpenShare bounds the open questions of one writer from outside the
	// process (writers.go), so that one that floods leaves room for the
	// others. 0 means OpenBytes/4.
	OpenShare int64
	// Now is the clock expiry and OrphanWait are judged by; nil means
	// time.Now. Tests set it.
	Now func() time.Time
}

func (o HubOptions) withDefaults() HubOptions {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.ReplayPerSession, DefaultReplayPerSession)
	def(&o.ReplaySessions, DefaultReplaySessions)
	def(&o.ReplayEvents, DefaultReplayEvents)
	def64(&o.ReplaySessionBytes, DefaultReplaySessionBytes)
	def64(&o.ReplayBytes, DefaultReplayBytes)
	def64(&o.OpenBytes, DefaultOpenBytes)
	if o.OpenShare == 0 && o.OpenBytes > 0 {
		o.OpenShare = max(o.OpenBytes/4, 1)
	}
	def64(&o.OpenShare, -1) // an unbounded hub: no share either
	return o
}

// Hub fans events out to in-process subscribers, keeps bounded replay
// buffers, and holds the open questions of every session it serves.
//
//   - Open questions are state, not history: an attention.requested stays
//     held, whole, until its owner (the same source and session) settles it
//     with attention.resolved or attention.timeout, or ends the session, or
//     nobody can answer it any more: ExpiredGrace past its expires_at, or
//     OrphanWait after its writer left (writers.go). Nothing else evicts
//     it, and every subscription made with SubscribeFrom starts with the
//     open questions it matches. One writer from outside holds at most its
//     share of them in bytes (HubOptions.OpenShare).
//   - Replay is history, bounded in events per session, in bytes per session
//     and in events and bytes in total; the least recently written session
//     with no open question gives up its oldest events first.
//   - Publishing never blocks: each subscriber has a bounded live queue. When
//     it is full, a debug or info event is dropped for that subscriber and
//     counted, unless it is an attention.* or control.* event (the state of
//     a question and the ack of a command); any other event that does not fit
//     closes the subscription with a reason, so nothing that matters is ever
//     dropped silently (AEP-0001 §8.1, AEP-0003 §8.4).
//
// A Hub is safe for concurrent use.
type Hub struct {
	opts HubOptions

	// mu guards everything below.
	mu         sync.Mutex
	subs       map[*Subscription]struct{}
	rings      map[string]*ring
	lru        *list.List // of *ring, most recently written at the front
	heldEvents int
	heldBytes  int64
	open       *openSet

	// servers says which server each session fronts; it has its own lock.
	servers *servers
}

// NewHub returns an empty hub with the default bounds.
func NewHub() *Hub { return NewHubWith(HubOptions{}) }

// NewHubWith returns an empty hub with the bounds of o.
func NewHubWith(o HubOptions) *Hub {
	return &Hub{opts: o.withDefaults(), subs: map[*Subscription]struct{}{},
		rings: map[string]*ring{}, lru: list.New(), open: newOpenSet(o.Now), servers: newServers()}
}

// ReplayDepth returns the per-session replay depth in events, for
// advertisement (AEP-0003 §5), or 0 when it is unbounded.
func (h *Hub) ReplayDepth() int { return max(h.opts.ReplayPerSession, 0) }

func (h *Hub) perSession() int {
	if h.opts.ReplayPerSession < 0 {
		return math.MaxInt
	}
	return h.opts.ReplayPerSession
}

// Stats is what a hub holds.
type Stats struct {
	// ReplayEvents and ReplayBytes are held in the replay buffers of
	// ReplaySessions sessions.
	ReplayEvents, ReplaySessions int
	ReplayBytes                  int64
	// Open and OpenBytes are the open questions held.
	Open      int
	OpenBytes int64
}

// Stats returns what the hub holds now.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open.dropDead()
	return Stats{ReplayEvents: h.heldEvents, ReplaySessions: len(h.rings), ReplayBytes: h.heldBytes,
		Open: h.open.order.Len(), OpenBytes: h.open.bytes}
}

// Write records an event of this process's own sessions and publishes it.
// It is the Sink of every local emitter and never refuses.
func (h *Hub) Write(ev aep.Event, raw []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishLocked(&Delivery{Event: ev, Raw: raw}, "")
	return nil
}

// publishLocked updates the open questions, buffers the event for replay
// and fans it out; writer put it in the hub ("" for the process). An open
// question asked again with its original id (a relay link re-announcing
// it) is already in front of every subscriber: it is neither buffered nor
// published twice.
func (h *Hub) publishLocked(d *Delivery, writer string) {
	h.servers.observe(&d.Event)
	if h.open.apply(d, writer) == reannounced {
		return
	}
	h.record(d)
	h.fanOutLocked(d)
}

// IngestError refuses an event that arrived from outside the process.
type IngestError struct {
	// Index is the refused event's index in the batch.
	Index int
	// Code is "unauthorized" (the event would change another emitter's
	// question) or "limit-exceeded" (the open questions, or the writer's
	// share of them, are at their bound).
	Code   string
	Detail string
}

func (e *IngestError) Error() string { return e.Code + ": " + e.Detail }

// Ingest records and publishes events that arrived from outside the
// process without a connection (POST): each event's source is its writer,
// one that is not connected (writers.go), so the questions a source posts
// leave the open set OrphanWait after its last post, or at their
// expires_at. See IngestFrom for the rest.
func (h *Hub) Ingest(evs []*aep.Event, raws [][]byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	writers := make([]string, len(evs))
	for i, ev := range evs {
		writers[i] = "source " + ev.Source
	}
	if err := h.admitLocked(evs, raws, writers); err != nil {
		return err
	}
	for _, w := range writers {
		h.open.back(w)
	}
	for i, ev := range evs {
		h.publishLocked(&Delivery{Event: *ev, Raw: raws[i]}, writers[i])
	}
	for _, w := range writers {
		h.open.left(w, false)
	}
	return nil
}

// IngestFrom records and publishes events that the connected writer sent
// from outside the process, all or none: a question's lifecycle is
// accepted only from the question's owner, a new question may not reuse
// the id of another emitter's open question, and a new question that
// would take the open questions past HubOptions.OpenBytes, or the
// writer's past HubOptions.OpenShare, is refused. Who may write a source
// or a session at all is the endpoint's to decide before calling it; it
// calls Left when the writer's connection ends.
func (h *Hub) IngestFrom(writer string, evs []*aep.Event, raws [][]byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	writers := make([]string, len(evs))
	for i := range writers {
		writers[i] = writer
	}
	if err := h.admitLocked(evs, raws, writers); err != nil {
		return err
	}
	h.open.back(writer)
	for i, ev := range evs {
		h.publishLocked(&Delivery{Event: *ev, Raw: raws[i]}, writer)
	}
	return nil
}

// Left records that writer's connection ended: unless it comes back
// (IngestFrom or Back), its open questions leave the open set OrphanWait
// from now, or at their expires_at if sooner. keepDated keeps those that
// have an expires_at until the rule every question follows (ExpiredGrace
// past it): a writer that will come back for them, a joined bridge.
func (h *Hub) Left(writer string, keepDated bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open.left(writer, keepDated)
}

// Back records that writer is connected again: its open questions wait
// for it again.
func (h *Hub) Back(writer string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open.back(writer)
}

// admitLocked decides whether the batch evs, event i put in the hub by
// writers[i], may be published. Callers hold h.mu.
func (h *Hub) admitLocked(evs []*aep.Event, raws [][]byte, writers []string) error {
	var adding int64
	addingBy := map[string]int64{}
	asked := map[string]*aep.Event{} // questions asked earlier in this batch
	for i, ev := range evs {
		id := questionOf(ev)
		if id == "" {
			continue
		}
		owner := h.open.owner(id)
		if owner == nil {
			owner = asked[id]
		}
		if why := ownerConflict(owner, ev); why != "" {
			return &IngestError{Index: i, Code: "unauthorized", Detail: why}
		}
		if ev.Type != typeRequested || ev.Session == "" || owner != nil {
			continue
		}
		asked[id] = ev
		size := deliverySize(&Delivery{Event: *ev, Raw: raws[i]})
		adding += size
		addingBy[writers[i]] += size
		over := func() bool {
			return limited64(h.opts.OpenBytes, h.open.bytes+adding) ||
				limited64(h.opts.OpenShare, h.open.writerBytes(writers[i])+addingBy[writers[i]])
		}
		if over() {
			h.open.dropDead() // questions nobody can answer any more make room
		}
		switch {
		case limited64(h.opts.OpenBytes, h.open.bytes+adding):
			return &IngestError{Index: i, Code: "limit-exceeded", Detail: fmt.Sprintf(
				"the open questions held would exceed %d bytes (%d held); no question is dropped to make room, so this one is refused until others are settled",
				h.opts.OpenBytes, h.open.bytes)}
		case limited64(h.opts.OpenShare, h.open.writerBytes(writers[i])+addingBy[writers[i]]):
			return &IngestError{Index: i, Code: "limit-exceeded", Detail: fmt.Sprintf(
				"this emitter's open questions would exceed %d bytes (%d held), its share of the %d bytes this hub holds for questions from outside; settle or time out some of them first",
				h.opts.OpenShare, h.open.writerBytes(writers[i]), h.opts.OpenBytes)}
		}
	}
	return nil
}

// OpenFrom returns how many open questions source has asked.
func (h *Hub) OpenFrom(source string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open.dropDead()
	return h.open.perSource[source]
}

// MustDeliver reports whether an event may never be dropped on its way to
// a consumer, whatever its severity: notice and above (AEP-0003 §8.4), a
// question's state, commands and their acks, and a session's start and
// end. A consumer too slow for one of them is disconnected with a reason
// instead, and resumes by position.
func MustDeliver(ev *aep.Event) bool {
	return ev.EffectiveSeverity() >= aep.SeverityNotice ||
		strings.HasPrefix(ev.Type, "attention.") || strings.HasPrefix(ev.Type, "control.") ||
		strings.HasPrefix(ev.Type, "session.")
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
			if !MustDeliver(ev) {
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

// Subscription is one subscriber. It starts with a backlog (the open
// questions it matches, then the replay it asked for), then receives live
// events on C. The backlog never counts against the live queue: a
// subscriber reading as fast as it can is never closed during its own
// replay. Read Backlog first, then C until it is closed; then Err says why
// (nil after Close).
type Subscription struct {
	// C delivers live events in publish order.
	C <-chan *Delivery

	hub    *Hub
	c      chan *Delivery
	filter Filter
	// backlog belongs to the one goroutine that reads the subscription.
	backlog      []*Delivery
	open, replay int

	// mu guards closed, err and dropped.
	mu      sync.Mutex
	closed  bool
	err     error
	dropped int
}

// ErrSlowSubscriber is the reason a subscription is closed when its queue
// is full and an event that may not be dropped must be delivered.
type ErrSlowSubscriber struct{ Dropped int }

func (e ErrSlowSubscriber) Error() string {
	return "subscriber too slow: its queue is full and an event that may not be dropped could not be delivered; resubscribe from the last position seen"
}

// Subscribe adds a live-only subscriber with a queue of n events (0 means
// DefaultQueue). It starts with no backlog; SubscribeFrom gives one.
func (h *Hub) Subscribe(f Filter, n int) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addLocked(f, nil, n)
}

func (h *Hub) addLocked(f Filter, backlog []*Delivery, n int) *Subscription {
	if n <= 0 {
		n = DefaultQueue
	}
	c := make(chan *Delivery, n)
	s := &Subscription{C: c, c: c, hub: h, filter: f, backlog: backlog}
	h.subs[s] = struct{}{}
	return s
}

// From says where a subscription's replay starts: nowhere (the zero value:
// live only), after given positions, or every buffered event (All).
type From struct {
	All       bool
	Positions []Position
}

// SubscribeFrom adds a subscriber with a live queue of n events (0 means
// DefaultQueue) whose backlog is, atomically with live delivery so nothing
// falls between them or arrives twice:
//  1. every open question f matches, as its original attention.requested,
//     oldest first, whatever replay has evicted;
//  2. the buffered events from selects and f matches, minus those open
//     questions (already delivered).
//
// It reports positions that predate the buffer, of every session from
// names, whatever f: a caller whose f hides sessions from its subscriber
// leaves their entries out too.
func (h *Hub) SubscribeFrom(f Filter, from From, n int) (*Subscription, []Exhausted) {
	h.mu.Lock()
	defer h.mu.Unlock()
	backlog, open := h.open.snapshot(f)
	keep := func(items []*Delivery) {
		for _, d := range items {
			if (f == nil || f(&d.Event)) && !h.open.has(d) {
				backlog = append(backlog, d)
			}
		}
	}
	var exhausted []Exhausted
	switch {
	case from.All:
		for e := h.lru.Back(); e != nil; e = e.Prev() {
			keep(e.Value.(*ring).items)
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
				keep(items)
			}
		}
	}
	s := h.addLocked(f, backlog, n)
	s.open, s.replay = open, len(backlog)-open // a kept vote counts as replay
	return s, exhausted
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.removeLocked(s)
}

// Backlog yields what the subscription starts with, each delivery once,
// releasing each as it is read; stopping early leaves the rest for the
// next call. Only the subscription's reader may call it.
func (s *Subscription) Backlog() iter.Seq[*Delivery] {
	return func(yield func(*Delivery) bool) {
		for len(s.backlog) > 0 {
			d := s.backlog[0]
			s.backlog[0] = nil
			s.backlog = s.backlog[1:]
			if !yield(d) {
				return
			}
		}
		s.backlog = nil
	}
}

// Counts returns how many open questions, then how many replayed events,
// the backlog held when the subscription began.
func (s *Subscription) Counts() (open, replay int) { return s.open, s.replay }

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

package bus

import (
	"container/list"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Replay buffer bounds (AEP-0003 §5). The depth is counted in events per
// session, and advertised as such; the byte budgets and the total event
// count may evict earlier, oldest settled history first.
const (
	DefaultReplayPerSession   = 1024
	DefaultReplaySessions     = 256
	DefaultReplaySessionBytes = 4 << 20
	DefaultReplayBytes        = 32 << 20
	DefaultReplayEvents       = 64 << 10
)

// eventOverhead is what a held event costs beyond its encoding and its data:
// the decoded envelope's strings and headers, and the buffer's bookkeeping.
const eventOverhead = 512

// deliverySize is the memory a held delivery accounts for: its encoding,
// its decoded data (a copy), and the envelope around them.
func deliverySize(d *Delivery) int64 {
	return int64(len(d.Raw)+len(d.Event.Data)) + eventOverhead
}

// Position is a resume position (AEP-0001 §7.6).
type Position struct {
	Session string `json:"session"`
	Epoch   int64  `json:"epoch"`
	Seq     int64  `json:"seq"`
}

// Exhausted reports a resume position older than the buffer holds, and the
// earliest position it does hold (AEP-0003 §5).
type Exhausted struct {
	Session  string
	Earliest Position
}

// ring is one session's buffer, in position order.
type ring struct {
	key     string
	session string
	items   []*Delivery
	ids     map[string]bool
	bytes   int64
	elem    *list.Element // in the hub's LRU list
}

// add admits d unless it is already held; it reports whether it did.
func (r *ring) add(d *Delivery, max int) bool {
	if r.ids[d.Event.ID] {
		return false // buffer admission dedupes on (source, id) (AEP-0003 §5)
	}
	// Keep positions ascending: backfill is inserted in order (AEP-0001
	// §7.2), and an event older than everything held, with the buffer
	// full, is not admitted (it would be evicted first anyway).
	at := len(r.items)
	if d.Event.Seq != nil {
		for at > 0 && r.items[at-1].Event.Seq != nil && after(r.items[at-1].Event, d.Event) {
			at--
		}
		if at == 0 && len(r.items) >= max {
			return false
		}
	}
	r.items = append(r.items, nil)
	copy(r.items[at+1:], r.items[at:])
	r.items[at] = d
	r.ids[d.Event.ID] = true
	r.bytes += deliverySize(d)
	return true
}

// dropFront evicts the oldest event held and returns its size.
func (r *ring) dropFront() int64 {
	d := r.items[0]
	r.items[0] = nil
	r.items = r.items[1:]
	delete(r.ids, d.Event.ID)
	n := deliverySize(d)
	r.bytes -= n
	return n
}

// after reports whether a's position is after b's.
func after(a, b aep.Event) bool {
	ae, be := a.EpochOrZero(), b.EpochOrZero()
	return ae > be || (ae == be && *a.Seq > *b.Seq)
}

// earliest returns the first sequenced position held.
func (r *ring) earliest() (Position, bool) {
	for _, d := range r.items {
		if d.Event.Seq != nil {
			return Position{Session: r.session, Epoch: d.Event.EpochOrZero(), Seq: *d.Event.Seq}, true
		}
	}
	return Position{}, false
}

// after returns the events strictly after p, and whether p predates the
// buffer.
func (r *ring) after(p Position) ([]*Delivery, bool) {
	start := -1
	for i, d := range r.items {
		if d.Event.Seq == nil {
			continue
		}
		e, s := d.Event.EpochOrZero(), *d.Event.Seq
		if e > p.Epoch || (e == p.Epoch && s > p.Seq) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, false
	}
	first, _ := r.earliest()
	exhausted := first.Epoch > p.Epoch || (first.Epoch == p.Epoch && first.Seq > p.Seq+1)
	return r.items[start:], exhausted
}

// sessionKey keys buffers by (source, session): session names are unique
// only per emitter (AEP-0001 §5.2).
func sessionKey(ev *aep.Event) string { return ev.Source + "\x00" + ev.Session }

// record adds a session-scoped event to its session's replay buffer, then
// evicts until every bound holds again.
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
		for limited(h.opts.ReplaySessions, len(h.rings)) {
			v := h.victim(r)
			if v == nil {
				break
			}
			h.dropRing(v)
		}
	} else {
		h.lru.MoveToFront(r.elem)
	}
	if !r.add(d, h.perSession()) {
		return
	}
	h.heldEvents++
	h.heldBytes += deliverySize(d)
	// The session's own bounds first: its oldest events go.
	for len(r.items) > 1 && (limited(h.opts.ReplayPerSession, len(r.items)) || limited64(h.opts.ReplaySessionBytes, r.bytes)) {
		h.heldBytes -= r.dropFront()
		h.heldEvents--
	}
	// Then the totals: the least recently written settled session gives
	// up its oldest event first.
	for limited64(h.opts.ReplayBytes, h.heldBytes) || limited(h.opts.ReplayEvents, h.heldEvents) {
		v := h.victim(nil)
		if v == nil {
			return
		}
		h.heldBytes -= v.dropFront()
		h.heldEvents--
		if len(v.items) == 0 {
			h.dropRing(v)
		}
	}
}

// victim picks the buffer that gives up history: the least recently
// written session with no open question, else the least recently written
// one; never keep, and nil when there is none.
func (h *Hub) victim(keep *ring) *ring {
	var fallback *ring
	for e := h.lru.Back(); e != nil; e = e.Prev() {
		r := e.Value.(*ring)
		if r == keep {
			continue
		}
		if h.open.perSession[r.key] == 0 {
			return r
		}
		if fallback == nil {
			fallback = r
		}
	}
	return fallback
}

// dropRing evicts a whole session buffer. Its open questions stay open:
// they live in the open set, not in the buffer.
func (h *Hub) dropRing(r *ring) {
	h.lru.Remove(r.elem)
	delete(h.rings, r.key)
	h.heldBytes -= r.bytes
	h.heldEvents -= len(r.items)
}

// limited reports whether n exceeds bound; a negative bound is no bound.
func limited(bound, n int) bool { return bound >= 0 && n > bound }

func limited64(bound, n int64) bool { return bound >= 0 && n > bound }

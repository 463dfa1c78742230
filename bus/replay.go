package bus

import (
	"container/list"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Replay buffer sizes (AEP-0003 §5): the depth is counted in events per
// session, and advertised as such.
const (
	DefaultReplayPerSession = 1024
	DefaultReplaySessions   = 256
)

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

// ring is one session's buffer, in arrival order.
type ring struct {
	key     string
	session string
	items   []*Delivery
	ids     map[string]bool
	elem    *list.Element // in the LRU list
}

func (r *ring) add(d *Delivery, max int) {
	if r.ids[d.Event.ID] {
		return // buffer admission dedupes on (source, id) (AEP-0003 §5)
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
			return
		}
	}
	r.items = append(r.items, nil)
	copy(r.items[at+1:], r.items[at:])
	r.items[at] = d
	r.ids[d.Event.ID] = true
	if len(r.items) > max {
		delete(r.ids, r.items[0].Event.ID)
		r.items = append(r.items[:0:0], r.items[1:]...)
	}
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
	return append([]*Delivery(nil), r.items[start:]...), exhausted
}

// sessionKey keys buffers by (source, session): session names are unique
// only per emitter (AEP-0001 §5.2).
func sessionKey(ev *aep.Event) string { return ev.Source + "\x00" + ev.Session }

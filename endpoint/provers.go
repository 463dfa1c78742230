package endpoint

import (
	"time"

	"github.com/gorilla/websocket"
)

// maxProving bounds the connections proving the token at /join at once:
// they are the only ones an endpoint serves before it knows who is there,
// each for at most the handshake deadline.
const maxProving = 64

// proveGrace is how long a connection proving the token keeps its slot
// while it has not sent the next frame of the exchange: once every slot
// is taken, a newcomer takes the slot of one that waited longer, silent
// ones (no challenge yet) first. A bridge sends each frame within a
// round trip, so it finishes long before; a peer that holds a slot
// without proving anything loses it to the next one that comes.
const proveGrace = 250 * time.Millisecond

// prover is a peer proving the token at /join. Its fields are guarded by
// the endpoint's mutex.
type prover struct {
	conn *websocket.Conn // nil until the upgrade is done
	// waiting is when the endpoint began waiting for the peer's next
	// frame (for its challenge: since it was admitted, upgrade included),
	// and challenged is set once its challenge arrived.
	waiting    time.Time
	challenged bool
	// evicted is set when its slot went to a newcomer: it is being
	// closed, and no longer counts.
	evicted bool
}

// evictee returns the prover whose slot goes to a newcomer when every slot
// is taken, or nil when none has waited grace for its peer: the silent one
// (no challenge yet) that waited longest, else the one that has waited
// longest for its finish.
func evictee(provers map[*prover]struct{}, now time.Time, grace time.Duration) *prover {
	var best *prover
	for p := range provers {
		switch {
		case p.evicted || now.Sub(p.waiting) < grace:
		case best == nil,
			!p.challenged && best.challenged,
			p.challenged == best.challenged && p.waiting.Before(best.waiting):
			best = p
		}
	}
	return best
}

// admitLocked gives a newcomer at /join a slot, taking one from a prover
// that has waited too long (evictee) when every slot is taken; it returns
// nil when none can be had. The evicted prover's connection is closed,
// which ends its exchange (one still upgrading is closed once upgraded).
// Callers hold e.mu.
func (e *Endpoint) admitLocked() *prover {
	if len(e.provers) >= maxProving {
		victim := evictee(e.provers, e.opts.now(), e.opts.proveGrace)
		if victim == nil {
			return nil
		}
		victim.evicted = true
		delete(e.provers, victim)
		if victim.conn != nil {
			victim.conn.Close()
		}
		e.evictions++
	}
	p := &prover{waiting: e.opts.now()}
	e.provers[p] = struct{}{}
	return p
}

// waitFor records that the endpoint is waiting for p's next frame from
// now; challenged says whether its challenge arrived.
func (e *Endpoint) waitFor(p *prover, challenged bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p.waiting, p.challenged = e.opts.now(), challenged
}

// release gives p's slot back, unless it already went to a newcomer.
func (e *Endpoint) release(p *prover) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !p.evicted {
		delete(e.provers, p)
	}
}

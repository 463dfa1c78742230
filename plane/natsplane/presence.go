package natsplane

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// presence is a member's heartbeat: who it is, and whether it is leaving.
type presence struct {
	Agent       string `json:"agent,omitempty"`
	Instance    string `json:"instance,omitempty"`
	Left        bool   `json:"left,omitempty"`
	HeartbeatMS int64  `json:"heartbeat_ms"`
}

// peer is another member as this one knows it. The ingest lock guards it.
type peer struct {
	// seen is when the cluster stored its last heartbeat; zero until
	// this member first hears its own (see judgeLocked).
	seen  time.Time
	every time.Duration // its heartbeat interval
	gone  bool
}

// goneAfter is how many heartbeats a member may miss before the others
// take it for gone.
const goneAfter = 3

// takePresence keeps track of who is alive. A member whose heartbeat
// stops, or that says it leaves, is gone: its open questions follow the
// abandoned rule in the hub (bus.Hub.Left, keeping dated questions until
// their expiry, as for a joined bridge whose link is down), and its
// sessions leave the roster. One that comes back is back.
//
// Silence is judged by this member's own heartbeats, read back from the
// bucket like the others': each one that comes back says this member
// hears the bucket up to the time the cluster stored it, and a member
// whose last heartbeat is older than goneAfter of its heartbeats by then
// is gone. When this member cannot hear (its connection is down, the
// bucket elects a leader, its consumer went with a server), its own
// heartbeats stop coming back too, and it takes nobody for gone; times
// are the cluster's, so neither a member's clock nor its scheduling
// delays count.
func (m *Member) takePresence(e entry) {
	fp := e.key
	if e.op != jetstream.KeyValuePut {
		return // a deleted heartbeat says nothing: silence does
	}
	env, err := open(e.value, kindPresence, m.n.prefix, fp)
	if err != nil || env.fp != fp || !m.fresh(env.signedAt, e.created) {
		return
	}
	var p presence
	if json.Unmarshal(env.body, &p) != nil {
		return
	}
	m.ingest.Lock()
	defer m.ingest.Unlock()
	if fp == m.fp {
		m.judgeLocked(e.created)
		return
	}
	pr := m.peerLocked(fp)
	pr.seen, pr.every = e.created, time.Duration(p.HeartbeatMS)*time.Millisecond
	switch {
	case p.Left && !pr.gone:
		m.goneLocked(fp, pr)
	case !p.Left && pr.gone:
		pr.gone = false
		m.hub.Back(writerOf(fp))
	}
}

// judgeLocked takes for gone every member whose last heartbeat is
// older, at the time the cluster stored this member's own, than
// goneAfter of its heartbeats. A member first heard of by another
// statement has its silence counted from the first judgement. Callers
// hold m.ingest.
func (m *Member) judgeLocked(at time.Time) {
	for fp, pr := range m.peers {
		if pr.gone {
			continue
		}
		if pr.seen.IsZero() {
			pr.seen = at
			continue
		}
		every := pr.every
		if every <= 0 {
			every = m.opts.Heartbeat
		}
		if at.Sub(pr.seen) > goneAfter*every {
			m.goneLocked(fp, pr)
		}
	}
}

// peerLocked returns what this member knows of the member fp. One first
// heard of now (its heartbeat, a session or an event of its) is taken for
// alive until it misses goneAfter heartbeats from the next judgement.
// Callers hold m.ingest.
func (m *Member) peerLocked(fp string) *peer {
	pr := m.peers[fp]
	if pr == nil {
		pr = &peer{}
		m.peers[fp] = pr
	}
	return pr
}

// goneLocked takes the member fp for gone. Callers hold m.ingest.
func (m *Member) goneLocked(fp string, pr *peer) {
	pr.gone = true
	m.hub.Left(writerOf(fp), true)
	for w, keepDated := range m.relayers[fp] {
		m.hub.Left(w, keepDated) // its emitters' connections went with it
	}
	m.log.Info("a member of the operator plane is gone; its open questions wait for it until they expire", "member", fp)
}

// state puts the member's heartbeat (or its leaving) in the members'
// bucket, outside the ordered outbox: a heartbeat orders nothing, and a
// bucket that stalls must never hold the sessions' events behind it.
func (m *Member) state(left bool) {
	ctx, cancel := context.WithTimeout(m.epoch(), m.opts.Heartbeat)
	defer cancel()
	if _, err := m.carry(ctx, item{op: opPresence, left: left}); err != nil {
		m.log.Debug("stating the heartbeat", "err", err)
	}
}

// beat states every heartbeat that this member is alive; reading its
// own back, it judges the others (takePresence).
func (m *Member) beat() {
	defer m.wg.Done()
	t := time.NewTicker(m.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		m.state(false)
		m.ingest.Lock()
		m.releaseLocked(0, m.opts.now().Add(-parkWait))
		m.ingest.Unlock()
	}
}

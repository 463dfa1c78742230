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
	seen  time.Time     // when its last heartbeat arrived (this member's clock)
	every time.Duration // its heartbeat interval
	gone  bool
}

// goneAfter is how many heartbeats a member may miss before the others
// take it for gone.
const goneAfter = 3

// watchMembers keeps track of who is alive. A member whose heartbeat
// stops, or that says it leaves, is gone: its open questions follow the
// abandoned rule in the hub (bus.Hub.Left, keeping dated questions until
// their expiry, as for a joined bridge whose link is down), and its
// sessions leave the roster. One that comes back is back.
func (m *Member) watchMembers(ctx context.Context, ready chan<- struct{}) error {
	return m.watch(ctx, m.kvs.members, ready, func(e jetstream.KeyValueEntry) {
		fp := e.Key()
		if fp == m.fp || e.Operation() != jetstream.KeyValuePut {
			return // a deleted heartbeat says nothing: silence does
		}
		env, err := open(e.Value(), kindPresence, m.n.prefix, fp)
		if err != nil || env.fp != fp || !m.fresh(env.signedAt, e.Created()) {
			return
		}
		var p presence
		if json.Unmarshal(env.body, &p) != nil {
			return
		}
		m.ingest.Lock()
		defer m.ingest.Unlock()
		pr := m.peerLocked(fp)
		pr.seen, pr.every = m.opts.now(), time.Duration(p.HeartbeatMS)*time.Millisecond
		switch {
		case p.Left && !pr.gone:
			m.goneLocked(fp, pr)
		case !p.Left && pr.gone:
			pr.gone = false
			m.hub.Back(writerOf(fp))
		}
	})
}

// peerLocked returns what this member knows of the member fp. One first
// heard of now (its heartbeat, a session or an event of its) is taken for
// alive, as if its heartbeat had just arrived: it is gone once it misses
// goneAfter of them. Callers hold m.ingest.
func (m *Member) peerLocked(fp string) *peer {
	pr := m.peers[fp]
	if pr == nil {
		pr = &peer{seen: m.opts.now()}
		m.peers[fp] = pr
	}
	return pr
}

// goneLocked takes the member fp for gone. Callers hold m.ingest.
func (m *Member) goneLocked(fp string, pr *peer) {
	pr.gone = true
	m.hub.Left(writerOf(fp), true)
	m.log.Info("a member of the operator plane is gone; its open questions wait for it until they expire", "member", fp)
}

// state puts the member's heartbeat (or its leaving) in the members'
// bucket, outside the ordered outbox: a heartbeat orders nothing, and a
// bucket that stalls must never hold the sessions' events behind it.
func (m *Member) state(left bool) {
	ctx, cancel := context.WithTimeout(m.ctx, m.opts.Heartbeat)
	defer cancel()
	if err := m.carry(ctx, item{op: opPresence, left: left}); err != nil {
		m.log.Debug("stating the heartbeat", "err", err)
	}
}

// beat states every heartbeat that this member is alive, and takes for
// gone the members that missed theirs.
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
		now := m.opts.now()
		m.ingest.Lock()
		for fp, pr := range m.peers {
			every := pr.every
			if every <= 0 {
				every = m.opts.Heartbeat
			}
			if !pr.gone && now.Sub(pr.seen) > goneAfter*every {
				m.goneLocked(fp, pr)
			}
		}
		m.ingest.Unlock()
	}
}

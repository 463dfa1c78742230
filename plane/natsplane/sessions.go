package natsplane

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Claim makes this member the route of a session of this process's,
// and states the session on the plane for every front door's roster.
func (m *Member) Claim(b plane.Binding, t plane.Target) error {
	if proof.SessionKey(b.Session) != m.fp {
		return fmt.Errorf("session %q is not certified to this process's key; only such sessions take commands over the plane", b.Session)
	}
	return m.claim(b, t, item{op: opBind})
}

// claim makes this member the route of b.Session's commands, to t, and
// queues it, the binding, to state the claim.
func (m *Member) claim(b plane.Binding, t plane.Target, it item) error {
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	tok := token(b.Source, b.Session)
	m.mu.Lock()
	if _, taken := m.claims[b.Session]; taken {
		m.mu.Unlock()
		return fmt.Errorf("session %q is already claimed", b.Session)
	}
	m.claims[b.Session] = localClaim{b: b, tok: tok, t: t}
	m.mu.Unlock()
	it.tok, it.raw, it.keep = tok, body, true
	m.enqueue(it)
	return nil
}

// Release ends the claim of a session that ended.
func (m *Member) Release(session string) {
	m.mu.Lock()
	c, ok := m.claims[session]
	delete(m.claims, session)
	m.mu.Unlock()
	if ok {
		m.enqueue(item{op: opUnbind, tok: c.tok, keep: true})
	}
}

// Sessions returns this member's claimed sessions, then the others' that
// are alive.
func (m *Member) Sessions() []plane.Binding {
	var out []plane.Binding
	m.mu.Lock()
	for _, c := range m.claims {
		out = append(out, c.b)
	}
	m.mu.Unlock()
	m.ingest.Lock()
	for _, rb := range m.remote {
		if !m.peerLocked(rb.fp).gone { // a gone member's sessions come back with it
			out = append(out, rb.b)
		}
	}
	m.ingest.Unlock()
	slices.SortFunc(out, func(a, b plane.Binding) int {
		switch {
		case a.Session < b.Session:
			return -1
		case a.Session > b.Session:
			return 1
		}
		return 0
	})
	return out
}

// takeBinding keeps the other members' claimed sessions for the
// roster: a binding is believed only when its session is certified to the
// key that signed it. A deleted entry leaves the roster (a holder of the
// cluster's credentials can hide an entry; commands are routed by the
// session's key, not by this bucket).
func (m *Member) takeBinding(e entry) {
	tok := e.key
	if e.op == jetstream.KeyValuePut && isRelayed(e.value) {
		m.takeRelayedBinding(e) // a door's emitter's (relay.go)
		return
	}
	m.ingest.Lock()
	defer m.ingest.Unlock()
	if e.op != jetstream.KeyValuePut {
		delete(m.remote, tok)
		return
	}
	env, err := open(e.value, kindBinding, m.n.prefix, tok)
	if err != nil || env.fp == m.fp {
		return
	}
	var b plane.Binding
	if json.Unmarshal(env.body, &b) != nil || proof.SessionKey(b.Session) != env.fp || token(b.Source, b.Session) != tok ||
		m.ended.has(tok) {
		return
	}
	m.remote[tok] = remoteBinding{fp: env.fp, b: b}
}

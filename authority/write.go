package authority

import (
	"slices"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Effects are what a decision did besides saying yes, for the caller to
// act on and log.
type Effects[P any] struct {
	// Replaced is a live connection the writer took over: the same
	// emitter reconnected before its old connection was noticed gone. The
	// caller closes it; what it wrote is the writer's now.
	Replaced *Conn[P]
	// TookSource is set when a joined bridge took its session's source
	// from a /socket emitter that wrote it first.
	TookSource bool
	// DroppedClaims counts the /socket claims on the session the joined
	// bridge started writing, and DroppedOpen the questions others left
	// open in it, which left the open set.
	DroppedClaims, DroppedOpen int
}

// Write decides whether the connection c may write an event of source
// into session ("" for an event of no session), and records what the
// decision holds: the first event of a source makes c its writer, a
// joined bridge's first event of a session makes it a joined one. It
// returns a *Refusal when c may not.
func (t *Table[L, P]) Write(c *Conn[P], source, session string) (Effects[P], *Refusal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.principal.Operator {
		return Effects[P]{}, refuse(ReasonOperator, "operator %q may read and answer questions, never emit events: emitters use the shared token or join with it", c.principal.Name)
	}
	if !c.hello || c.principal.Rights&Emit == 0 {
		return Effects[P]{}, refuse(ReasonNoRight, "this connection said hello as a consumer: it may send commands, never events; say hello with role emitter to emit")
	}
	return t.writeLocked(c, source, session)
}

// Post decides whether p may write an event of source into session
// without a connection (POST /events): it holds nothing by it, so it may
// write only what nobody holds.
func (t *Table[L, P]) Post(p Principal, source, session string) *Refusal {
	if p.Operator {
		return refuse(ReasonOperator, "operator %q may read and answer questions, never emit events: emitters use the shared token", p.Name)
	}
	if p.Rights&Emit == 0 {
		return refuse(ReasonNoRight, "this credential may not emit events")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, why := t.writeLocked(nil, source, session)
	return why
}

// writeLocked is Write for c, or Post when c is nil. Callers hold t.mu.
func (t *Table[L, P]) writeLocked(c *Conn[P], source, session string) (Effects[P], *Refusal) {
	var eff Effects[P]
	joined := c != nil && c.principal.Proved
	key := ""
	if c != nil {
		key = c.principal.Key
	}
	js := t.joined[session]
	switch {
	case t.local[session]:
		return eff, refuse(ReasonLocalSession, "session %q belongs to a bridge in this process; no connection may write into it", session)
	case t.localSources[source]:
		return eff, refuse(ReasonLocalSource, "source %q is a session of this process; no connection may write as it", source)
	case proof.SessionKey(session) != "" && key != proof.SessionKey(session):
		return eff, refuse(ReasonKeySession, "session %q is named after a bridge's session key; only that bridge may write it: a connection through /join whose token proof also proves the key", session)
	case proof.SourceKey(source) != "" && key != proof.SourceKey(source):
		return eff, refuse(ReasonKeySource, "source %q names a session of a bridge's session key; only that bridge may write as it: a connection through /join whose token proof also proves the key", source)
	case js != nil && js.source != source:
		return eff, refuse(ReasonJoinedSource, "session %q belongs to a bridge joined to this hub, under source %q; no connection may write into it under another source", session, js.source)
	case js != nil && !joined:
		return eff, refuse(ReasonJoinedOnly, "session %q belongs to a bridge joined to this hub; only a bridge that proved the token at /join may write into it", session)
	case js != nil && !sameSecret(c.resume, js.resume):
		return eff, refuse(ReasonJoinedSecret, "session %q belongs to a bridge joined to this hub; only that bridge may write into it: a connection through /join whose hello presents the resume secret the endpoint gave it (capabilities.experimental[%q])",
			session, aep.ResumeSecretCapability)
	case joined && session != "" && !c.sessions[session] && len(c.sessions) >= MaxSourcesPerConn:
		return eff, refuse(ReasonLimit, "this connection already writes %d sessions, the most one connection may", MaxSourcesPerConn)
	}
	var why *Refusal
	if joined && js == nil && session != "" {
		why = t.takeSessionLocked(c, session, source, &eff)
	} else {
		why = t.holdSourceLocked(c, source, &eff)
	}
	if why == nil && joined && session != "" {
		t.joinSessionLocked(c, session, source)
	}
	return eff, why
}

// takeSessionLocked decides whether the joined connection c may write
// source as it starts writing session, which no joined bridge writes yet.
// A bridge's session is its own, and a joined bridge beats /socket: what
// other emitters put in the session first gives way. When a /socket
// emitter (another one: it does not present c's secret) wrote source
// first, c takes the source from it, live or away; the claims of /socket
// connections on the session are dropped; and the questions that anyone
// but a joined bridge or this emitter left open in the session leave the
// open set: they were never the bridge's, and nobody else may settle them
// any more. Callers hold t.mu.
func (t *Table[L, P]) takeSessionLocked(c *Conn[P], session, source string, eff *Effects[P]) *Refusal {
	// theirs reports whether what a source's holder asked in the session
	// so far was another emitter's, and so is not the bridge's to keep.
	theirs := func(h *holder[P]) bool { return h == nil || (!h.joined && !sameSecret(c.resume, h.resume)) }
	h := t.sources[source]
	taken := h != nil && theirs(h)
	if taken {
		if c.sources >= MaxSourcesPerConn {
			return refuse(ReasonLimit, "this connection already writes %d sources, the most one connection may", MaxSourcesPerConn)
		}
		if h.conn != nil {
			h.conn.sources--
		}
		h.conn, h.agent, h.instance, h.resume, h.joined = c, c.agent, c.instance, c.resume, true
		c.sources++
		eff.TookSource = true
	}
	sourceWasTheirs := h == nil || taken
	if why := t.holdSourceLocked(c, source, eff); why != nil {
		return why
	}
	n := len(t.claims)
	t.claims = slices.DeleteFunc(t.claims, func(cl claim[L, P]) bool {
		return cl.conn != nil && cl.conn != c && !cl.conn.principal.Proved && cl.session == session
	})
	eff.DroppedClaims = n - len(t.claims)
	eff.DroppedOpen = t.q.DropOpen(session, func(src string) bool {
		if src == source {
			return sourceWasTheirs
		}
		return theirs(t.sources[src])
	})
	return nil
}

// holdSourceLocked decides whether c may write source, and makes it the
// source's writer when nobody is. Callers hold t.mu.
func (t *Table[L, P]) holdSourceLocked(c *Conn[P], source string, eff *Effects[P]) *Refusal {
	h := t.sources[source]
	if h != nil && t.forgetIdleLocked(source, h) {
		h = nil
	}
	joined := c != nil && c.principal.Proved
	switch {
	case h == nil && c != nil && c.sources >= MaxSourcesPerConn:
		return refuse(ReasonLimit, "this connection already writes %d sources, the most one connection may", MaxSourcesPerConn)
	case h == nil:
		if c != nil {
			t.sources[source] = &holder[P]{conn: c, agent: c.agent, instance: c.instance, resume: c.resume, joined: joined}
			c.sources++
		}
		return nil
	case c != nil && h.conn == c:
		return nil
	case c != nil && h.conn != nil && sameSecret(c.resume, h.resume) && (joined || !h.joined):
		// The same emitter reconnected before the endpoint noticed that
		// its old connection died.
		old := h.conn
		t.replaceLocked(old, c)
		eff.Replaced = old
		if h.conn == c {
			return nil
		}
		return refuse(ReasonLimit, "this connection already writes %d sources, the most one connection may", MaxSourcesPerConn)
	case h.conn != nil:
		return refuse(ReasonSourceLive, "source %q is written by another live connection (agent %q, instance %q); only that connection may write it",
			source, h.agent, h.instance)
	case c != nil && sameSecret(c.resume, h.resume) && (joined || !h.joined) && c.sources < MaxSourcesPerConn:
		// The emitter is back: it proved it with its secret, and a
		// joined bridge came back through /join.
		h.conn, h.agent, h.instance = c, c.agent, c.instance
		h.joined = h.joined || joined
		c.sources++
		return nil
	}
	how := "a connection whose hello presents the resume secret the endpoint gave it"
	if h.joined {
		how += ", through /join"
	}
	left := "an emitter (agent %q, instance %q) that left questions open"
	if h.sessions > 0 {
		left = "a bridge joined to this hub (agent %q, instance %q) whose link is down"
	}
	return refuse(ReasonSourceHeld, "source %q belongs to "+left+"; only it may write it when it reconnects: %s (capabilities.experimental[%q])",
		source, h.agent, h.instance, how, aep.ResumeSecretCapability)
}

// replaceLocked hands what the live connection old writes to c, whose
// hello presented old's resume secret: the same emitter reconnected before
// the endpoint noticed that old died (a half-open TCP connection looks
// live for up to the endpoint's pong wait). old's sources, its joined
// sessions and its claims become c's, up to c's bounds (beyond them, a
// source is released as if old had left); the caller closes old, whose
// Disconnect then finds nothing of its own left. Callers hold t.mu.
func (t *Table[L, P]) replaceLocked(old, c *Conn[P]) {
	for src, h := range t.sources {
		if h.conn != old {
			continue
		}
		old.sources--
		if c.sources >= MaxSourcesPerConn {
			h.conn = nil
			t.forgetIdleLocked(src, h)
			continue
		}
		h.conn, h.agent, h.instance = c, c.agent, c.instance
		h.joined = h.joined || c.principal.Proved
		c.sources++
	}
	for session := range old.sessions {
		if c.sessions == nil || c.sessions[session] || len(c.sessions) >= MaxSourcesPerConn {
			t.leaveSessionLocked(session)
			continue
		}
		c.sessions[session] = true
	}
	if old.sessions != nil {
		old.sessions = map[string]bool{}
	}
	has := map[string]bool{}
	for _, cl := range t.claims {
		if cl.conn == c {
			has[cl.session] = true
		}
	}
	t.claims = slices.DeleteFunc(t.claims, func(cl claim[L, P]) bool { return cl.conn == old && has[cl.session] })
	for i, cl := range t.claims {
		if cl.conn == old {
			t.claims[i].conn = c
		}
	}
}

// joinSessionLocked records that the joined connection c writes session,
// under source, which it holds. A session new to the table is bound to
// both, and to c's resume secret. Callers hold t.mu.
func (t *Table[L, P]) joinSessionLocked(c *Conn[P], session, source string) {
	if c.sessions[session] {
		return
	}
	c.sessions[session] = true
	js := t.joined[session]
	if js == nil {
		js = &joinedSession{source: source, resume: c.resume}
		t.joined[session] = js
		t.sources[source].sessions++
	}
	js.live++
}

// leaveSessionsLocked forgets the sessions a joined connection wrote; one
// no joined connection writes any more stays reserved among the most
// recent RetiredJoined. Callers hold t.mu.
func (t *Table[L, P]) leaveSessionsLocked(c *Conn[P]) {
	for session := range c.sessions {
		t.leaveSessionLocked(session)
	}
	c.sessions = nil
}

// leaveSessionLocked records that one joined connection stopped writing
// session; once none does, the session stays reserved among the most
// recent RetiredJoined, and the oldest reservation goes. Callers hold
// t.mu.
func (t *Table[L, P]) leaveSessionLocked(session string) {
	js := t.joined[session]
	if js == nil {
		return
	}
	if js.live--; js.live > 0 {
		return
	}
	t.retirements++
	js.retired = t.retirements
	t.joinedRetired = append(t.joinedRetired, retiredSession{session: session, n: t.retirements})
	if len(t.joinedRetired) <= RetiredJoined {
		return
	}
	old := t.joinedRetired[0]
	t.joinedRetired = t.joinedRetired[1:]
	if js := t.joined[old.session]; js != nil && js.live == 0 && js.retired == old.n {
		delete(t.joined, old.session)
		if h := t.sources[js.source]; h != nil {
			h.sessions--
			if h.conn == nil {
				t.forgetIdleLocked(js.source, h)
			}
		}
	}
}

// forgetIdleLocked forgets the holder h of src when nothing keeps it held
// any more: its writer is away, no remembered joined session is bound to
// it, and it has no open question (they were settled, or left the open
// set when its writer did not come back). It reports whether it did.
// Callers hold t.mu.
func (t *Table[L, P]) forgetIdleLocked(src string, h *holder[P]) bool {
	if h.conn != nil || h.sessions > 0 || t.q.OpenFrom(src) > 0 {
		return false
	}
	delete(t.sources, src)
	return true
}

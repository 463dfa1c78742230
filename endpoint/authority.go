package endpoint

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Who may write what (DESIGN.md, threat model). The token authenticates a
// connection; it does not make every holder an owner of every session:
//   - the sessions of this process (its Claims without a connection) are
//     written only by their bridge: no connection may write their session
//     name or their source, and no claim on them is accepted;
//   - a source that a live WebSocket connection writes belongs to that
//     connection: no other connection, and no POST, may write it, unless
//     it is the same emitter reconnected (below); when the connection goes
//     while the source still has open questions, the source waits for the
//     same emitter to reconnect and settle them. Agent and instance are
//     public (roster), so they prove nothing: the emitter proves it is the
//     same one with its resume secret (below);
//   - a session that a bridge joined to this hub (its connection proved
//     the token at /join) is bound to the source that first wrote it and
//     to that connection's resume secret: no connection and no POST may
//     write into it under another source, and only a /join connection
//     presenting that secret may write it at all, while the bridge is
//     linked and, among the most recent retiredJoined ones, after it left
//     (its link reconnects and re-announces its questions). Its source is
//     held for the bridge as long, open questions or not: nobody else
//     writes it in any session while the link is down;
//   - a session whose id is certified to a bridge's session key (it ends
//     with ".k" and the key's fingerprint, proof.Key.SessionID), and a
//     source that names such a session, are written only by a /join
//     connection whose token proof also proved that key: the bridge that
//     named it, on this hub and on any hub that restarted since, which
//     checks the claim without having seen the bridge before;
//   - a connection that said hello as a consumer sends commands, never
//     events;
//   - a question's lifecycle comes only from its owner (bus.Hub.Ingest).
//
// Two /socket emitters with different sources that name the same session
// are both legitimate: commands to that session are refused as ambiguous
// (AEP-0004 §4.5), never delivered to either. A joined bridge's session is
// not shared, and a joined bridge beats /socket: when it first writes a
// session that /socket connections (or POSTs) wrote before it (after the
// hub changed hands, or to squat a public source), it takes the session's
// source from them, their claims on the session go, and what they left
// open in it is no longer listed (takeSessionLocked); nobody may write it
// under another source after that, so its commands are never made
// ambiguous by someone else.
//
// The resume secret. Every emitter connection gets one in the endpoint's
// hello, under capabilities.experimental["resume-secret"]: 32 random bytes,
// base64url, never logged. A source held for an emitter that left with
// questions open goes back only to a connection whose hello presents the
// secret of the connection that wrote it (compared in constant time), and,
// for a joined bridge's source, only through /join, after the token proof.
// Such a connection also takes the source over from a connection that
// still looks live: the emitter reconnected before this endpoint noticed
// that its old connection died (a half-open TCP connection looks live for
// up to pongWait); everything the old one wrote moves to the new one, and
// the old one is closed (replaceLocked). The secret travels only on the
// connection it was given on, so holding the token, or knowing the agent
// and instance, is not enough to take over another emitter's questions. A connection that presents a well-formed
// secret keeps it (the endpoint's hello echoes it), so an emitter keeps one
// secret across its reconnects; any other gets a fresh one. An emitter
// that does not keep its secret cannot take a held source back: it writes
// under a new source, and what the old one left open stays listed until
// the hub restarts.

// maxSourcesPerConn bounds the sources one connection writes (a relay
// link writes one per session of its bridge).
const maxSourcesPerConn = 4096

// retiredLocal is how many ended sessions of this process stay reserved, so
// nobody writes into their history after them.
const retiredLocal = 4096

// retiredJoined is how many sessions whose joined bridges all left stay
// reserved for them.
const retiredJoined = 4096

// joinedSession is a session that a bridge joined to this hub writes.
type joinedSession struct {
	source string // the source it is bound to: the first a joined connection wrote it under
	// resume is the resume secret of the connection that first wrote it:
	// only a /join connection presenting it writes the session.
	resume  string
	live    int    // joined connections writing it now
	retired uint64 // the retirement that reserves it once live is 0
}

// sourceHolder is the connection that writes a source.
type sourceHolder struct {
	conn            *socket // nil while its emitter reconnects with questions open
	agent, instance string
	// resume is the writer's resume secret, and joined whether it came
	// through /join: what a connection must match to take the source back.
	resume string
	joined bool
	// sessions counts the joined sessions bound to this source that are
	// remembered (joinedSessions): while there is one, the source stays
	// held for its bridge, open questions or not.
	sessions int
}

// reserveLocal marks a session of this process (and its source, when
// known) as written only by its bridge. Callers hold e.mu.
func (e *Endpoint) reserveLocal(c Claim) {
	e.localSessions[c.Session] = true
	if c.Source != "" {
		e.localSources[c.Source] = true
	}
}

// retireLocal keeps an ended local session reserved among the most recent
// retiredLocal ones. Callers hold e.mu.
func (e *Endpoint) retireLocal(c Claim) {
	e.retired = append(e.retired, c)
	if len(e.retired) <= retiredLocal {
		return
	}
	old := e.retired[0]
	e.retired = e.retired[1:]
	delete(e.localSessions, old.Session)
	delete(e.localSources, old.Source)
}

// authorize decides whether conn (nil for a POST) may write ev; a
// WebSocket emitter's first event of a source makes the connection that
// source's writer, and a joined bridge's first event of a session makes
// the session a joined one. It returns "" or the detail of an
// unauthorized refusal.
func (e *Endpoint) authorize(conn *socket, ev *aep.Event) string {
	var role, agent, instance, resume string
	if conn != nil {
		conn.mu.Lock()
		role, agent, instance, resume = conn.role, conn.agent, conn.instance, conn.resume
		conn.mu.Unlock()
		if role != aep.RoleEmitter && role != aep.RoleBoth {
			return "this connection said hello as a consumer: it may send commands, never events; say hello with role emitter to emit"
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	joined := conn != nil && conn.joined
	js := e.joinedSessions[ev.Session]
	switch {
	case e.localSessions[ev.Session]:
		return fmt.Sprintf("session %q belongs to a bridge in this process; no connection may write into it", ev.Session)
	case e.localSources[ev.Source]:
		return fmt.Sprintf("source %q is a session of this process; no connection may write as it", ev.Source)
	case proof.SessionKey(ev.Session) != "" && (conn == nil || conn.key != proof.SessionKey(ev.Session)):
		return fmt.Sprintf("session %q is named after a bridge's session key; only that bridge may write it: a connection through /join whose token proof also proves the key", ev.Session)
	case proof.SourceKey(ev.Source) != "" && (conn == nil || conn.key != proof.SourceKey(ev.Source)):
		return fmt.Sprintf("source %q names a session of a bridge's session key; only that bridge may write as it: a connection through /join whose token proof also proves the key", ev.Source)
	case js != nil && js.source != ev.Source:
		return fmt.Sprintf("session %q belongs to a bridge joined to this hub, under source %q; no connection may write into it under another source", ev.Session, js.source)
	case js != nil && !joined:
		return fmt.Sprintf("session %q belongs to a bridge joined to this hub; only a bridge that proved the token at /join may write into it", ev.Session)
	case js != nil && !sameSecret(resume, js.resume):
		return fmt.Sprintf("session %q belongs to a bridge joined to this hub; only that bridge may write into it: a connection through /join whose hello presents the resume secret the endpoint gave it (capabilities.experimental[%q])",
			ev.Session, resumeCapability)
	case joined && ev.Session != "" && !conn.sessions[ev.Session] && len(conn.sessions) >= maxSourcesPerConn:
		return fmt.Sprintf("this connection already writes %d sessions, the most one connection may", maxSourcesPerConn)
	}
	var why string
	if joined && js == nil && ev.Session != "" {
		why = e.takeSessionLocked(conn, ev.Session, ev.Source, agent, instance, resume)
	} else {
		why = e.holdSourceLocked(conn, ev.Source, agent, instance, resume)
	}
	if why == "" && joined && ev.Session != "" {
		e.joinSessionLocked(conn, ev.Session, ev.Source, resume)
	}
	return why
}

// takeSessionLocked decides whether the joined connection conn, whose
// hello named agent, instance and the resume secret resume, may write
// source as it starts writing session, which no joined bridge writes yet.
// A bridge's session is its own, and a joined bridge beats /socket: what
// other emitters put in the session first gives way. When a /socket
// emitter (another one: it does not present conn's secret) wrote source
// first, conn takes the source from it, live or away; the claims of
// /socket connections on the session are dropped; and the questions that
// anyone but a joined bridge or this emitter left open in the session are
// dropped from the hub's open set: they were never the bridge's, and
// nobody else may settle them any more. Callers hold e.mu.
func (e *Endpoint) takeSessionLocked(conn *socket, session, source, agent, instance, resume string) string {
	// theirs reports whether what src asked in the session so far was
	// another emitter's, and so is not the bridge's to keep.
	theirs := func(h *sourceHolder) bool { return h == nil || (!h.joined && !sameSecret(resume, h.resume)) }
	h := e.sources[source]
	taken := h != nil && theirs(h)
	if taken {
		if conn.sources >= maxSourcesPerConn {
			return fmt.Sprintf("this connection already writes %d sources, the most one connection may", maxSourcesPerConn)
		}
		if h.conn != nil {
			h.conn.sources--
		}
		h.conn, h.agent, h.instance, h.resume, h.joined = conn, agent, instance, resume, true
		conn.sources++
		e.log.Warn("a bridge joined with a session whose source a /socket connection wrote first; the source is the bridge's now", "session", session)
	}
	sourceWasTheirs := h == nil || taken
	if why := e.holdSourceLocked(conn, source, agent, instance, resume); why != "" {
		return why
	}
	e.evictUnjoinedLocked(conn, session)
	dropped := e.opts.Hub.DropOpen(session, func(src string) bool {
		if src == source {
			return sourceWasTheirs
		}
		return theirs(e.sources[src])
	})
	if dropped > 0 {
		e.log.Warn("a bridge joined with a session in which others left questions open; they are no longer listed as open", "session", session, "dropped", dropped)
	}
	return ""
}

// evictUnjoinedLocked drops the claims that /socket connections hold on a
// session a joined bridge starts writing: a bridge's session is its own,
// and one that wrote it first (after the hub changed hands, before the
// bridge joined again, say) would make every command to it ambiguous.
// They may not write it again (authorize). Callers hold e.mu.
func (e *Endpoint) evictUnjoinedLocked(conn *socket, session string) {
	n := len(e.claims)
	e.claims = slices.DeleteFunc(e.claims, func(c Claim) bool {
		return c.owner != nil && c.owner != conn && !c.owner.joined && c.Session == session
	})
	if n != len(e.claims) {
		e.log.Warn("a bridge joined with a session that /socket connections wrote first; their claims on it are dropped", "session", session, "dropped", n-len(e.claims))
	}
}

// holdSourceLocked decides whether conn, whose hello named agent,
// instance and the resume secret resume, may write source, and makes it
// the source's writer when nobody is. Callers hold e.mu.
func (e *Endpoint) holdSourceLocked(conn *socket, source, agent, instance, resume string) string {
	h := e.sources[source]
	if h != nil && e.forgetIdleLocked(source, h) {
		h = nil
	}
	switch {
	case h == nil && conn != nil && conn.sources >= maxSourcesPerConn:
		return fmt.Sprintf("this connection already writes %d sources, the most one connection may", maxSourcesPerConn)
	case h == nil:
		if conn != nil {
			e.sources[source] = &sourceHolder{conn: conn, agent: agent, instance: instance, resume: resume, joined: conn.joined}
			conn.sources++
		}
		return ""
	case conn != nil && h.conn == conn:
		return ""
	case conn != nil && h.conn != nil && sameSecret(resume, h.resume) && (conn.joined || !h.joined):
		// The same emitter reconnected before this endpoint noticed that
		// its old connection died.
		e.replaceLocked(h.conn, conn, agent, instance)
		if h.conn == conn {
			return ""
		}
		return fmt.Sprintf("this connection already writes %d sources, the most one connection may", maxSourcesPerConn)
	case h.conn != nil:
		return fmt.Sprintf("source %q is written by another live connection (agent %q, instance %q); only that connection may write it",
			source, h.agent, h.instance)
	case conn != nil && sameSecret(resume, h.resume) && (conn.joined || !h.joined) && conn.sources < maxSourcesPerConn:
		// The emitter is back: it proved it with its secret, and a
		// joined bridge came back through /join.
		h.conn, h.agent, h.instance = conn, agent, instance
		h.joined = h.joined || conn.joined
		conn.sources++
		return ""
	}
	how := "a connection whose hello presents the resume secret the endpoint gave it"
	if h.joined {
		how += ", through /join"
	}
	left := "an emitter (agent %q, instance %q) that left questions open"
	if h.sessions > 0 {
		left = "a bridge joined to this hub (agent %q, instance %q) whose link is down"
	}
	return fmt.Sprintf("source %q belongs to "+left+"; only it may write it when it reconnects: %s (capabilities.experimental[%q])",
		source, h.agent, h.instance, how, resumeCapability)
}

// replaceLocked hands what the live connection old writes to conn, whose
// hello, as agent and instance, presented old's resume secret: the same
// emitter reconnected before this endpoint noticed that old died (a
// half-open TCP connection looks live for up to pongWait). old's sources,
// its joined sessions and its claims become conn's, up to conn's bounds
// (beyond them, a source is released as if old had left), and old is
// closed; its teardown (dropClaims, releaseSources) then finds nothing of
// its own left. Callers hold e.mu.
func (e *Endpoint) replaceLocked(old, conn *socket, agent, instance string) {
	for src, h := range e.sources {
		if h.conn != old {
			continue
		}
		old.sources--
		if conn.sources >= maxSourcesPerConn {
			e.releaseHolderLocked(src, h)
			continue
		}
		h.conn, h.agent, h.instance = conn, agent, instance
		h.joined = h.joined || conn.joined
		conn.sources++
	}
	for session := range old.sessions {
		if conn.sessions == nil || conn.sessions[session] || len(conn.sessions) >= maxSourcesPerConn {
			e.leaveSessionLocked(session)
			continue
		}
		conn.sessions[session] = true
	}
	if old.sessions != nil {
		old.sessions = map[string]bool{}
	}
	e.moveClaimsLocked(old, conn)
	old.shutdown("another connection presenting this emitter's resume secret took over what this one wrote")
	e.log.Info("an emitter reconnected before its old connection was noticed gone; what the old one wrote moves to the new one, and the old one is closed",
		"agent", agent, "instance", instance)
}

// writerOf names an emitter in the hub (bus.Hub.IngestFrom): by the
// session key it proved, or else by a digest of its resume secret, which
// stays the same across its reconnects and reveals nothing of it.
func writerOf(key, resume string) string {
	if key != "" {
		return "key " + key
	}
	sum := sha256.Sum256([]byte(resume))
	return "emitter " + hex.EncodeToString(sum[:16])
}

// arrived counts s, which said hello as an emitter, among the live
// connections of its writer; the hub keeps that writer's questions for it
// again (bus.Hub.Back).
func (e *Endpoint) arrived(s *socket) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writers[s.writer]++
	e.opts.Hub.Back(s.writer)
}

// departed is arrived's reverse, when s can send nothing more: once its
// writer has no live connection left, the questions it left open wait
// bus.OrphanWait for it to come back (bus.Hub.Left); a joined bridge's
// dated questions wait for their expires_at.
func (e *Endpoint) departed(s *socket) {
	s.mu.Lock()
	writer := s.writer
	s.mu.Unlock()
	if writer == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writers[writer]--; e.writers[writer] > 0 {
		return
	}
	delete(e.writers, writer)
	e.opts.Hub.Left(writer, s.joined)
}

// sameSecret compares resume secrets in constant time; an empty one
// matches nothing.
func sameSecret(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// joinSessionLocked records that the joined connection conn, whose hello
// presented the resume secret resume, writes session, under source, which
// it holds. A session new to the hub is bound to both. Callers hold e.mu.
func (e *Endpoint) joinSessionLocked(conn *socket, session, source, resume string) {
	if conn.sessions[session] {
		return
	}
	conn.sessions[session] = true
	js := e.joinedSessions[session]
	if js == nil {
		js = &joinedSession{source: source, resume: resume}
		e.joinedSessions[session] = js
		e.sources[source].sessions++
	}
	js.live++
}

// leaveSessionsLocked forgets the sessions a joined connection wrote; one
// no joined connection writes any more stays reserved among the most
// recent retiredJoined. Callers hold e.mu.
func (e *Endpoint) leaveSessionsLocked(conn *socket) {
	for session := range conn.sessions {
		e.leaveSessionLocked(session)
	}
	conn.sessions = nil
}

// leaveSessionLocked records that one joined connection stopped writing
// session; once none does, the session stays reserved among the most
// recent retiredJoined, and the oldest reservation goes. Callers hold
// e.mu.
func (e *Endpoint) leaveSessionLocked(session string) {
	js := e.joinedSessions[session]
	if js == nil {
		return
	}
	if js.live--; js.live > 0 {
		return
	}
	e.retirements++
	js.retired = e.retirements
	e.joinedRetired = append(e.joinedRetired, retiredSession{session: session, n: e.retirements})
	if len(e.joinedRetired) <= retiredJoined {
		return
	}
	old := e.joinedRetired[0]
	e.joinedRetired = e.joinedRetired[1:]
	if js := e.joinedSessions[old.session]; js != nil && js.live == 0 && js.retired == old.n {
		delete(e.joinedSessions, old.session)
		if h := e.sources[js.source]; h != nil {
			h.sessions--
			if h.conn == nil {
				e.releaseHolderLocked(js.source, h)
			}
		}
	}
}

// retiredSession is a joined session's retirement, oldest first.
type retiredSession struct {
	session string
	n       uint64
}

// releaseSources forgets what a connection wrote once it can send nothing
// more. A source with open questions stays reserved for its emitter, and a
// joined bridge's sessions, and their sources, stay reserved for it.
func (e *Endpoint) releaseSources(conn *socket) {
	if e.opts.afterRelease != nil {
		defer e.opts.afterRelease()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leaveSessionsLocked(conn)
	for src, h := range e.sources {
		if h.conn == conn {
			h.conn = nil
		}
		e.forgetIdleLocked(src, h) // and those whose questions left since
	}
}

// releaseHolderLocked lets go of src, whose writer left: it stays held for
// the same emitter (its resume secret) while it has open questions or a
// joined session bound to it is remembered, and is forgotten otherwise.
// Callers hold e.mu.
func (e *Endpoint) releaseHolderLocked(src string, h *sourceHolder) {
	h.conn = nil
	e.forgetIdleLocked(src, h)
}

// forgetIdleLocked forgets the holder h of src when nothing keeps it held
// any more: its writer is away, no remembered joined session is bound to
// it, and it has no open question (they were settled, or left the open
// set when its writer did not come back, bus.OrphanWait). It reports
// whether it did. Callers hold e.mu.
func (e *Endpoint) forgetIdleLocked(src string, h *sourceHolder) bool {
	if h.conn != nil || h.sessions > 0 || e.opts.Hub.OpenFrom(src) > 0 {
		return false
	}
	delete(e.sources, src)
	return true
}

package endpoint

import (
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Who may write what (DESIGN.md, threat model). The token authenticates a
// connection; it does not make every holder an owner of every session:
//   - the sessions of this process (its Claims without a connection) are
//     written only by their bridge: no connection may write their session
//     name or their source, and no claim on them is accepted;
//   - a source that a live WebSocket connection writes belongs to that
//     connection: no other connection, and no POST, may write it; when the
//     connection goes while the source still has open questions, the source
//     waits for the same emitter (its hello's agent and instance) to
//     reconnect and settle them;
//   - a session that a bridge joined to this hub (its connection proved
//     the token at /join) is written only by joined bridges: no /socket
//     connection and no POST may write into it under any source, while the
//     bridge is linked and, among the most recent retiredJoined ones,
//     after it left (its link reconnects and re-announces its questions);
//   - a connection that said hello as a consumer sends commands, never
//     events;
//   - a question's lifecycle comes only from its owner (bus.Hub.Ingest).
//
// Two emitters with different sources that name the same session (two
// /socket emitters, or two joined bridges) are both legitimate: commands to that session are refused as ambiguous (AEP-0004
// §4.5), never delivered to either.

// maxSourcesPerConn bounds the sources one connection writes (a relay
// link writes one per session of its bridge).
const maxSourcesPerConn = 4096

// retiredLocal is how many ended sessions of this process stay reserved, so
// nobody writes into their history after them.
const retiredLocal = 4096

// retiredJoined is how many sessions whose joined bridges all left stay
// reserved for them.
const retiredJoined = 4096

// joinedSession is a session that bridges joined to this hub write.
type joinedSession struct {
	live    int    // joined connections writing it now
	retired uint64 // the retirement that reserves it once live is 0
}

// sourceHolder is the connection that writes a source.
type sourceHolder struct {
	conn            *socket // nil while its emitter reconnects with questions open
	agent, instance string
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
	var role, agent, instance string
	if conn != nil {
		conn.mu.Lock()
		role, agent, instance = conn.role, conn.agent, conn.instance
		conn.mu.Unlock()
		if role != aep.RoleEmitter && role != aep.RoleBoth {
			return "this connection said hello as a consumer: it may send commands, never events; say hello with role emitter to emit"
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.localSessions[ev.Session]:
		return fmt.Sprintf("session %q belongs to a bridge in this process; no connection may write into it", ev.Session)
	case e.localSources[ev.Source]:
		return fmt.Sprintf("source %q is a session of this process; no connection may write as it", ev.Source)
	case (conn == nil || !conn.joined) && e.joinedSessions[ev.Session] != nil && !e.claimsLocked(conn, ev.Session):
		return fmt.Sprintf("session %q belongs to a bridge joined to this hub; only a bridge that proved the token at /join may write into it", ev.Session)
	case conn != nil && conn.joined && ev.Session != "" && !conn.sessions[ev.Session] && len(conn.sessions) >= maxSourcesPerConn:
		return fmt.Sprintf("this connection already writes %d sessions, the most one connection may", maxSourcesPerConn)
	}
	why := e.holdSourceLocked(conn, ev.Source, agent, instance)
	if why == "" && conn != nil && conn.joined && ev.Session != "" {
		e.joinSessionLocked(conn, ev.Session)
	}
	return why
}

// claimsLocked reports whether conn already claims session: an emitter
// that wrote the session before a bridge joined with it keeps writing it.
// Callers hold e.mu.
func (e *Endpoint) claimsLocked(conn *socket, session string) bool {
	if conn == nil {
		return false
	}
	for _, c := range e.claims {
		if c.owner == conn && c.Session == session {
			return true
		}
	}
	return false
}

// holdSourceLocked decides whether conn may write source, and makes it
// the source's writer when nobody is. Callers hold e.mu.
func (e *Endpoint) holdSourceLocked(conn *socket, source, agent, instance string) string {
	h := e.sources[source]
	switch {
	case h == nil && conn != nil && conn.sources >= maxSourcesPerConn:
		return fmt.Sprintf("this connection already writes %d sources, the most one connection may", maxSourcesPerConn)
	case h == nil:
		if conn != nil {
			e.sources[source] = &sourceHolder{conn: conn, agent: agent, instance: instance}
			conn.sources++
		}
		return ""
	case conn != nil && h.conn == conn:
		return ""
	case h.conn != nil:
		return fmt.Sprintf("source %q is written by another live connection (agent %q, instance %q); only that connection may write it",
			source, h.agent, h.instance)
	case conn != nil && agent == h.agent && instance == h.instance && conn.sources < maxSourcesPerConn:
		h.conn = conn // the emitter is back
		conn.sources++
		return ""
	}
	return fmt.Sprintf("source %q belongs to an emitter (agent %q, instance %q) that left questions open; only it may write it, when it reconnects",
		source, h.agent, h.instance)
}

// joinSessionLocked records that the joined connection conn writes
// session. Callers hold e.mu.
func (e *Endpoint) joinSessionLocked(conn *socket, session string) {
	if conn.sessions[session] {
		return
	}
	conn.sessions[session] = true
	js := e.joinedSessions[session]
	if js == nil {
		js = &joinedSession{}
		e.joinedSessions[session] = js
	}
	js.live++
}

// leaveSessionsLocked forgets the sessions a joined connection wrote; one
// no joined connection writes any more stays reserved among the most
// recent retiredJoined. Callers hold e.mu.
func (e *Endpoint) leaveSessionsLocked(conn *socket) {
	for session := range conn.sessions {
		js := e.joinedSessions[session]
		if js == nil {
			continue
		}
		if js.live--; js.live > 0 {
			continue
		}
		e.retirements++
		js.retired = e.retirements
		e.joinedRetired = append(e.joinedRetired, retiredSession{session: session, n: e.retirements})
		if len(e.joinedRetired) > retiredJoined {
			old := e.joinedRetired[0]
			e.joinedRetired = e.joinedRetired[1:]
			if js := e.joinedSessions[old.session]; js != nil && js.live == 0 && js.retired == old.n {
				delete(e.joinedSessions, old.session)
			}
		}
	}
	conn.sessions = nil
}

// retiredSession is a joined session's retirement, oldest first.
type retiredSession struct {
	session string
	n       uint64
}

// releaseSources forgets what a connection wrote once it can send nothing
// more. A source with open questions stays reserved for its emitter, and a
// joined bridge's sessions stay reserved for joined bridges.
func (e *Endpoint) releaseSources(conn *socket) {
	if e.opts.afterRelease != nil {
		defer e.opts.afterRelease()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leaveSessionsLocked(conn)
	for src, h := range e.sources {
		if h.conn != conn {
			continue
		}
		if e.opts.Hub.OpenFrom(src) > 0 {
			h.conn = nil
		} else {
			delete(e.sources, src)
		}
	}
}

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
//   - a connection that said hello as a consumer sends commands, never
//     events;
//   - a question's lifecycle comes only from its owner (bus.Hub.Ingest).
//
// Two emitters with different sources that name the same session are both
// legitimate: commands to that session are refused as ambiguous (AEP-0004
// §4.5), never delivered to either.

// maxSourcesPerConn bounds the sources one connection writes (a relay
// link writes one per session of its bridge).
const maxSourcesPerConn = 4096

// retiredLocal is how many ended sessions of this process stay reserved, so
// nobody writes into their history after them.
const retiredLocal = 4096

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
// source's writer. It returns "" or the detail of an unauthorized refusal.
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
	}
	h := e.sources[ev.Source]
	switch {
	case h == nil && conn != nil && conn.sources >= maxSourcesPerConn:
		return fmt.Sprintf("this connection already writes %d sources, the most one connection may", maxSourcesPerConn)
	case h == nil:
		if conn != nil {
			e.sources[ev.Source] = &sourceHolder{conn: conn, agent: agent, instance: instance}
			conn.sources++
		}
		return ""
	case conn != nil && h.conn == conn:
		return ""
	case h.conn != nil:
		return fmt.Sprintf("source %q is written by another live connection (agent %q, instance %q); only that connection may write it",
			ev.Source, h.agent, h.instance)
	case conn != nil && agent == h.agent && instance == h.instance && conn.sources < maxSourcesPerConn:
		h.conn = conn // the emitter is back
		conn.sources++
		return ""
	}
	return fmt.Sprintf("source %q belongs to an emitter (agent %q, instance %q) that left questions open; only it may write it, when it reconnects",
		ev.Source, h.agent, h.instance)
}

// releaseSources forgets what a connection wrote once it can send nothing
// more. A source with open questions stays reserved for its emitter.
func (e *Endpoint) releaseSources(conn *socket) {
	if e.opts.afterRelease != nil {
		defer e.opts.afterRelease()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
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

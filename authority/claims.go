package authority

import (
	"slices"
)

// claim is one claimant of a session's commands: a session of this
// process (conn nil, local its route) or an emitter connection.
type claim[L, P any] struct {
	session, source string // source: a local session's, reserved with it
	local           L
	conn            *Conn[P]
}

// Route is where a session's commands go: Local, a session of this
// process, when Conn is nil; else the emitter connection Conn.
type Route[L, P any] struct {
	Session string
	Local   L
	Conn    *Conn[P]
}

// AddLocal registers a session of this process, under source (a session
// of this process reserves it too; "" when unknown), whose commands go to
// local. The session and its source are then written only by its bridge.
func (t *Table[L, P]) AddLocal(session, source string, local L) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.claims = append(t.claims, claim[L, P]{session: session, source: source, local: local})
	t.local[session] = true
	if source != "" {
		t.localSources[source] = true
	}
}

// RemoveLocal forgets the claim of a session of this process that ended.
// The session, and its source, stay reserved among the RetiredLocal most
// recently ended.
func (t *Table[L, P]) RemoveLocal(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.claims = slices.DeleteFunc(t.claims, func(cl claim[L, P]) bool {
		if cl.session != session || cl.conn != nil {
			return false
		}
		t.retired = append(t.retired, localSession{session: cl.session, source: cl.source})
		if len(t.retired) > RetiredLocal {
			old := t.retired[0]
			t.retired = t.retired[1:]
			delete(t.local, old.session)
			delete(t.localSources, old.source)
		}
		return true
	})
}

// Sequenced registers, once, c as a claimant of session, which it is
// writing under source with a sequence number (an emitter owns the
// sessions it sequences: their commands are routed to it), unless c no
// longer writes source: another connection took it over since, and c's
// claims went with it. It reports whether the claim is new, so a caller
// that registers the claim before the event is published (an operator
// who sees the event must find its route) can take a new claim back with
// Unsequenced when the event is refused.
func (t *Table[L, P]) Sequenced(c *Conn[P], source, session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.sources[source]; h == nil || h.conn != c {
		return false
	}
	for _, cl := range t.claims {
		if cl.conn == c && cl.session == session {
			return false
		}
	}
	t.claims = append(t.claims, claim[L, P]{session: session, conn: c})
	return true
}

// Unsequenced takes back the claim Sequenced just registered for c on
// session, when the event that made it was refused.
func (t *Table[L, P]) Unsequenced(c *Conn[P], session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.claims = slices.DeleteFunc(t.claims, func(cl claim[L, P]) bool {
		return cl.conn == c && cl.session == session
	})
}

// Route finds the one claimant of session's commands (AEP-0004 §4.5): a
// *Refusal says there is none (no-route) or more than one (ambiguous).
func (t *Table[L, P]) Route(session string) (Route[L, P], *Refusal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var found []claim[L, P]
	for _, cl := range t.claims {
		if cl.session == session {
			found = append(found, cl)
		}
	}
	switch len(found) {
	case 0:
		return Route[L, P]{}, refuse(ReasonNoRoute, "no connected emitter owns session %q", session)
	case 1:
		return Route[L, P]{Session: session, Local: found[0].local, Conn: found[0].conn}, nil
	}
	return Route[L, P]{}, refuse(ReasonAmbiguous, "more than one live emitter claims session %q; the command was not delivered", session)
}

// Claims returns every claim, in the order they were made: the roster
// (AEP-0003 §4.1).
func (t *Table[L, P]) Claims() []Route[L, P] {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Route[L, P], len(t.claims))
	for i, cl := range t.claims {
		out[i] = Route[L, P]{Session: cl.session, Local: cl.local, Conn: cl.conn}
	}
	return out
}

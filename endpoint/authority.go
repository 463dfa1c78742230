package endpoint

import (
	"net/http"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
)

// Who may do what is package authority's to decide (its documentation has
// the rules): the endpoint authenticates a principal on each surface,
// registers connections, sessions of this process and claims in its
// Table, and asks it about every event and command. This file is the
// glue.

// table is the endpoint's authority: sessions of this process route their
// commands to a Claim, connections are sockets.
type table = authority.Table[Claim, *socket]

// Bounds of the table, as the tests name them.
const (
	maxSourcesPerConn = authority.MaxSourcesPerConn
	retiredJoined     = authority.RetiredJoined
)

// principalKey is the request context's key of the principal the token
// (or, later, a credential) authenticated.
type principalKey struct{}

// principalOf returns who presented r's credential (see auth).
func principalOf(r *http.Request) authority.Principal {
	p, _ := r.Context().Value(principalKey{}).(authority.Principal)
	return p
}

// authorize decides whether conn may write ev; it returns "" or the
// detail of an unauthorized refusal. What the decision did besides is
// acted on and logged here: a connection taken over by the same emitter
// is closed.
func (e *Endpoint) authorize(conn *socket, ev *aep.Event) string {
	eff, why := e.access.Write(conn.auth, ev.Source, ev.Session)
	if eff.TookSource {
		e.log.Warn("a bridge joined with a session whose source a /socket connection wrote first; the source is the bridge's now", "session", ev.Session)
	}
	if eff.DroppedClaims > 0 {
		e.log.Warn("a bridge joined with a session that /socket connections wrote first; their claims on it are dropped", "session", ev.Session, "dropped", eff.DroppedClaims)
	}
	if eff.DroppedOpen > 0 {
		e.log.Warn("a bridge joined with a session in which others left questions open; they are no longer listed as open", "session", ev.Session, "dropped", eff.DroppedOpen)
	}
	if old := eff.Replaced; old != nil {
		old.Peer.shutdown("another connection presenting this emitter's resume secret took over what this one wrote")
		old.Peer.mu.Lock()
		agent, instance := old.Peer.agent, old.Peer.instance
		old.Peer.mu.Unlock()
		e.log.Info("an emitter reconnected before its old connection was noticed gone; what the old one wrote moves to the new one, and the old one is closed",
			"agent", agent, "instance", instance)
	}
	if why != nil {
		return why.Detail
	}
	return ""
}

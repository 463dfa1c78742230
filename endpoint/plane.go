package endpoint

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
)

// planeWait bounds a command's round trip through the operator plane to
// the session's owner on another process.
const planeWait = 10 * time.Second

// planePrincipal is p as it travels on the operator plane to a session's
// owner, which checks it again: its name (none for the shared token's
// holder), its rights and its scope.
func planePrincipal(p authority.Principal) plane.Principal {
	out := plane.Principal{Scopes: p.Scope.Patterns(), Groups: p.Groups}
	if p.Name != authority.TokenHolderName {
		out.Name = p.Name
	}
	for _, r := range []struct {
		has  authority.Rights
		name string
	}{{authority.Read, plane.RightRead}, {authority.Command, plane.RightAnswer}, {authority.Emit, plane.RightEmit}} {
		if p.Rights&r.has != 0 {
			out.Rights = append(out.Rights, r.name)
		}
	}
	return out
}

// planeCommand routes a command that no session of this process claims
// through the operator plane, to the process that owns its session. The
// principal was checked already (scope, right); the owner checks it
// again. It returns "" when the owner's session made its ack decision.
func (e *Endpoint) planeCommand(p authority.Principal, ev *aep.Event, data []byte) (string, string) {
	// As for a session of this process (socket.command): a command the
	// session does not accept is refused on the connection (AEP-0004
	// §4.2), and never enters its history.
	for _, b := range e.opts.Plane.Sessions() {
		if b.Session == ev.Session && !slices.Contains(b.Accepts, ev.Type) {
			return "unsupported", fmt.Sprintf("session %q accepts %v, not %s", ev.Session, b.Accepts, ev.Type)
		}
	}
	ctx, cancel := context.WithTimeout(e.base, planeWait)
	defer cancel()
	return e.opts.Plane.Command(ctx, planePrincipal(p), ev, data)
}

// planeEntries are the roster entries of the sessions that other
// processes of the operator plane claim, that p may see; skip names the
// sessions already listed.
func (e *Endpoint) planeEntries(p authority.Principal, skip []aep.RosterEntry) []aep.RosterEntry {
	if e.opts.Plane == nil {
		return nil
	}
	var out []aep.RosterEntry
	for _, b := range e.opts.Plane.Sessions() {
		if slices.ContainsFunc(skip, func(r aep.RosterEntry) bool { return r.Session == b.Session }) ||
			!p.SeesSession(b.Session, e.opts.Hub) {
			continue
		}
		out = append(out, aep.RosterEntry{Session: b.Session, Agent: b.Agent, Instance: b.Instance,
			Control: aep.NewControlCaps(b.Accepts).Raw()})
	}
	return out
}

package endpoint

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
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
	// §4.2), and never enters its history. A session whose claim this
	// door has not read yet is checked by its owner alone (relayTarget,
	// the bridge's control intake), which answers once either way.
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

// relayer is an operator plane that carries what the emitters connected
// to this front door write (natsplane.Member): their events reach every
// door, as this door's emitter's writing, and a command for one of their
// sessions, given on any door, reaches this one, which hands it to the
// emitter's connection. The in-process plane has no other door.
type relayer interface {
	// Relay states an event the hub admitted from the emitter writer.
	Relay(writer string, keepDated bool, ev aep.Event, raw []byte)
	// RelayLeft states that the emitter writer's last connection ended.
	RelayLeft(writer string, keepDated bool)
	// ClaimRelayed makes this door the route of b.Session's commands,
	// which go to t.
	ClaimRelayed(writer string, b plane.Binding, t plane.Target) error
	// ClaimedElsewhere names the other door whose claim holds the
	// session of source, or "".
	ClaimedElsewhere(source, session string) string
}

// writtenElsewhere refuses an event of a session that an emitter on
// another front door of the plane claims: it returns why, or "".
func (e *Endpoint) writtenElsewhere(ev *aep.Event) string {
	r := e.relayer()
	if r == nil || ev.Session == "" || r.ClaimedElsewhere(ev.Source, ev.Session) == "" {
		return ""
	}
	return fmt.Sprintf("session %q of %s is written through another front door of the operator plane; an emitter writes a session through one door at a time",
		ev.Session, ev.Source)
}

// relays is what the endpoint stated on the plane of its emitter
// connections: the sessions each claimed, and how many connections of
// each emitter relayed. Its zero value is ready; it has its own lock.
type relays struct {
	mu      sync.Mutex
	conns   map[*socket]*relayedConn
	writers map[string]int
	// claimed counts the connections that claim each session: an
	// emitter that reconnects claims it on its new connection before
	// the old one is gone, and the plane's claim stays until the last.
	claimed map[string]int
}

// relayedConn is what one connection relayed.
type relayedConn struct {
	writer    string
	keepDated bool
	sessions  []string
}

// relayer returns the endpoint's plane when it carries its emitters'
// writing to other doors, else nil.
func (e *Endpoint) relayer() relayer {
	r, _ := e.opts.Plane.(relayer)
	return r
}

// relayEvent states on the plane an event of s's emitter that the hub
// admitted; claimed says it made s the claimant of its session, which
// this door then claims on the plane too.
func (e *Endpoint) relayEvent(s *socket, writer string, ev *aep.Event, data []byte, claimed bool) {
	r := e.relayer()
	if r == nil || writer == "" {
		return
	}
	keepDated := e.access.Principal(s.auth).Proved
	e.relays.mu.Lock()
	if e.relays.conns == nil {
		e.relays.conns, e.relays.writers, e.relays.claimed = map[*socket]*relayedConn{}, map[string]int{}, map[string]int{}
	}
	rc := e.relays.conns[s]
	if rc == nil {
		rc = &relayedConn{writer: writer, keepDated: keepDated}
		e.relays.conns[s] = rc
		e.relays.writers[writer]++
	}
	e.relays.mu.Unlock()
	if claimed {
		// The claim comes before the event: another door that holds the
		// event and has not read the claim yet routes the session's
		// commands here (natsplane.Member.Command), and finds it held.
		e.claimRelayed(r, s, rc, writer, ev)
	}
	r.Relay(writer, keepDated, *ev, data)
	if ev.Type == "session.ended" {
		e.relays.mu.Lock()
		defer e.relays.mu.Unlock()
		n := len(rc.sessions)
		rc.sessions = slices.DeleteFunc(rc.sessions, func(x string) bool { return x == ev.Session })
		if len(rc.sessions) < n {
			e.unclaimLocked(ev.Session)
		}
	}
}

// claimRelayed claims on the plane the session of ev, which s's emitter
// is now the claimant of on this door.
func (e *Endpoint) claimRelayed(r relayer, s *socket, rc *relayedConn, writer string, ev *aep.Event) {
	c, why := e.route(ev.Session)
	if why != nil || c.owner != s {
		return
	}
	b := plane.Binding{Session: ev.Session, Source: ev.Source, Agent: c.Agent, Instance: c.Instance, Accepts: c.Accepts}
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	if e.relays.claimed[ev.Session] == 0 {
		if err := r.ClaimRelayed(writer, b, relayTarget{e}); err != nil {
			e.log.Warn("an emitter's session takes no commands from other front doors", "session", ev.Session, "err", err)
			return
		}
	}
	e.relays.claimed[ev.Session]++
	rc.sessions = append(rc.sessions, ev.Session)
}

// unclaimLocked drops a connection's claim of session, and the plane's
// with the last. Callers hold e.relays.mu.
func (e *Endpoint) unclaimLocked(session string) {
	if e.relays.claimed[session]--; e.relays.claimed[session] <= 0 {
		delete(e.relays.claimed, session)
		e.opts.Plane.Release(session)
	}
}

// relayGone states on the plane that s, which can send nothing more,
// ended: its sessions' claims go, and, when it was its emitter's last
// connection, every door's questions of the emitter follow the abandoned
// rule.
func (e *Endpoint) relayGone(s *socket) {
	r := e.relayer()
	if r == nil {
		return
	}
	e.relays.mu.Lock()
	rc := e.relays.conns[s]
	delete(e.relays.conns, s)
	last := false
	if rc != nil {
		if e.relays.writers[rc.writer]--; e.relays.writers[rc.writer] <= 0 {
			delete(e.relays.writers, rc.writer)
			last = true
		}
		for _, session := range rc.sessions {
			e.unclaimLocked(session)
		}
	}
	e.relays.mu.Unlock()
	if last {
		r.RelayLeft(rc.writer, rc.keepDated)
	}
}

// relayPosted states on the plane the events POSTed to /events, which the
// hub admitted, as the writing of their sources.
func (e *Endpoint) relayPosted(evs []*aep.Event, lines [][]byte) {
	r := e.relayer()
	if r == nil {
		return
	}
	for i, ev := range evs {
		r.Relay("source "+ev.Source, false, *ev, lines[i])
	}
}

// relayTarget takes the commands another front door routed to a session
// of one of this door's emitter connections: it hands them to the
// connection that claims the session now, as a command given here would
// be (socket.command), with who sent it as that door authenticated them.
type relayTarget struct{ e *Endpoint }

func (t relayTarget) Submit(cmd aep.Event, raw []byte, by plane.Principal) plane.Outcome {
	c, why := t.e.route(cmd.Session)
	if why != nil {
		return plane.Outcome{Code: why.Code(), Detail: why.Detail}
	}
	if !slices.Contains(c.Accepts, cmd.Type) {
		return plane.Outcome{Code: "unsupported", Detail: fmt.Sprintf("session %q accepts %v, not %s", cmd.Session, c.Accepts, cmd.Type)}
	}
	// The plane names no shared token's holder (planePrincipal); the
	// emitter is told of it as a command given here would tell it.
	name := by.Name
	if name == "" {
		name = authority.TokenHolderName
	}
	from := control.Sender{Authenticated: true, By: name, Groups: by.Groups, ReadOnly: !by.May(plane.RightAnswer)}
	var code, detail string
	if rt, ok := c.Target.(RawTarget); ok {
		code, detail = rt.SubmitRaw(&cmd, raw, from)
	} else {
		code, detail = c.Target.Submit(cmd, from)
	}
	return plane.Outcome{Code: code, Detail: detail}
}

package endpoint

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
)

// Target is a session that accepts commands: the bridge wires each local
// session's control intake to the endpoint through it.
type Target interface {
	// Submit hands cmd, sent by from, to the session. It returns "" when
	// the session made its ack decision (the ack reaches subscribers as an
	// event), or a connection-scoped refusal code and detail (AEP-0004
	// §4.2).
	Submit(cmd aep.Event, from control.Sender) (code, detail string)
}

// RawTarget is a Target that takes a command's exact bytes: a relay
// forwards a command byte-identically (AEP-0004 §4.4). cmd is raw, parsed.
type RawTarget interface {
	SubmitRaw(cmd *aep.Event, raw []byte, from control.Sender) (code, detail string)
}

// Claim describes a live session an endpoint terminates, for command routing
// and roster frames (AEP-0003 §4.1).
type Claim struct {
	// Session is the claimed session. Required.
	Session string
	// Source is the session's source URI; a session of this process
	// reserves it too, so no connection writes as it.
	Source string
	// Agent and Instance identify the claimant in roster entries; ""
	// leaves them out.
	Agent    string
	Instance string
	// Accepts lists the commands the session takes; nil means none, and
	// every command for it is nacked unsupported (AEP-0004 §4).
	Accepts []string
	// Control is the claimant's declared control block, relayed verbatim
	// in roster entries; nil means {accepts, ack_window_ms} from Accepts.
	Control json.RawMessage
	// Emits is the claimant's declared category list, if any.
	Emits []string
	// Target takes the commands routed to the session. Required.
	Target Target

	owner *socket // the emitter connection behind a remote claim
}

// AddClaim registers a session of this process that accepts commands. The
// session, and its source, are then written only by its bridge: no
// connection may write into them (package authority).
func (e *Endpoint) AddClaim(c Claim) { e.access.AddLocal(c.Session, c.Source, c) }

// RemoveClaim forgets the claim of a session of this process that ended.
// The session stays reserved among the most recent ended ones.
func (e *Endpoint) RemoveClaim(session string) { e.access.RemoveLocal(session) }

// claimOf is the claim a route names: a session of this process's, or the
// claim of the emitter connection behind it, as its hello declared it.
func claimOf(r authority.Route[Claim, *socket]) Claim {
	if r.Conn == nil {
		return r.Local
	}
	s := r.Conn.Peer
	s.mu.Lock()
	defer s.mu.Unlock()
	return Claim{Session: r.Session, Agent: s.agent, Instance: s.instance, Accepts: s.accepts, Control: s.control,
		Emits: s.emits, Target: socketTarget{s}, owner: s}
}

// route finds the one claim of a session (AEP-0004 §4.5).
func (e *Endpoint) route(session string) (Claim, *authority.Refusal) {
	r, why := e.access.Route(session)
	if why != nil {
		return Claim{}, why
	}
	return claimOf(r), nil
}

// claims returns every live claim, in the order they were made.
func (e *Endpoint) claims() []Claim {
	routes := e.access.Claims()
	out := make([]Claim, len(routes))
	for i, r := range routes {
		out[i] = claimOf(r)
	}
	return out
}

// accepts is the union of the commands the live claims accept.
func (e *Endpoint) accepts() []string {
	out := []string{}
	for _, c := range e.claims() {
		for _, a := range c.Accepts {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

// rosterEntries is the snapshot of live claims (AEP-0003 §4.1 rules 3-5)
// that p may see: one entry per claim, declarations relayed verbatim. A
// scoped operator is not told of sessions outside its scope.
func (e *Endpoint) rosterEntries(p authority.Principal) []aep.RosterEntry {
	claims := e.claims()
	entries := make([]aep.RosterEntry, 0, len(claims))
	for _, c := range claims {
		if !p.SeesSession(c.Session, e.opts.Hub) {
			continue
		}
		entry := aep.RosterEntry{Session: c.Session, Agent: c.Agent, Instance: c.Instance, Emits: c.Emits}
		switch {
		case c.Control != nil:
			entry.Control = c.Control // verbatim (AEP-0003 §4.1 rule 4)
		case c.owner == nil:
			entry.Control = aep.NewControlCaps(c.Accepts).Raw()
		}
		entries = append(entries, entry)
	}
	return append(entries, e.planeEntries(p, entries)...)
}

// socketTarget forwards commands to the emitter behind a connection,
// byte-identically; its acks come back as events on that connection. An
// emitter that honours sender frames (a bridge joined to this hub) is told
// who sent each command, in a frame just before it (aep.FrameSender). One
// that does not cannot record who sent a command, nor refuse a read-only
// operator's: such a command is refused here instead.
type socketTarget struct{ s *socket }

func (t socketTarget) Submit(cmd aep.Event, from control.Sender) (string, string) {
	b, err := json.Marshal(cmd)
	if err != nil {
		return "invalid", "the command could not be encoded"
	}
	return t.SubmitRaw(&cmd, b, from)
}

func (t socketTarget) SubmitRaw(cmd *aep.Event, raw []byte, from control.Sender) (string, string) {
	select {
	case <-t.s.done:
		return "no-route", "the emitter that owns this session has disconnected"
	default:
	}
	t.s.mu.Lock()
	senders := t.s.senders
	t.s.mu.Unlock()
	switch {
	case senders:
		t.s.send(aep.EncodeFrame(aep.NewSender(cmd, from.By, from.Groups, from.ReadOnly)))
	case from.ReadOnly:
		return "unauthorized", fmt.Sprintf("%q may read this session, not answer: its right is read", from.By)
	}
	t.s.send(append([]byte(nil), raw...))
	return "", ""
}

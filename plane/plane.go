package plane

import (
	"context"
	"slices"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// Member is one process's part in the operator plane: the front door's
// view of every member's sessions (Hub), the way its own sessions' events
// reach the others (Sink), the sessions whose commands it takes (Claim),
// and the routing of an operator's command to the session's owner
// wherever it runs (Command).
//
// A Member is safe for concurrent use.
type Member interface {
	// Hub is what the front door serves: the events of every member's
	// sessions, their open questions and their history. Subscriptions are
	// made on it; it is never written to from outside but through Sink
	// and the member itself.
	Hub() *bus.Hub
	// Sink is where this process's session emitters write: their events
	// reach Hub at once and every other member's Hub after. It is also a
	// bus.Redeliverer: a re-sent ack reaches every member's subscribers.
	Sink() Sink
	// Claim makes this member the route of b.Session's commands, which go
	// to t. The session must be one this process writes.
	Claim(b Binding, t Target) error
	// Release ends a claim: the session has ended.
	Release(session string)
	// Command routes an operator's command, which this front door
	// authenticated as from, to the session it addresses, wherever it
	// runs. It returns "" when the session made its ack decision (the ack
	// reaches subscribers as an event), or a connection-scoped refusal
	// code and detail (AEP-0004 §4.2).
	Command(ctx context.Context, from Principal, cmd *aep.Event, raw []byte) (code, detail string)
	// Sessions returns every claimed session on the plane, this member's
	// and the others', for the roster (AEP-0003 §4.1).
	Sessions() []Binding
	// Close leaves the plane: this member's sessions' questions then
	// follow the abandoned rule on the others (bus.OrphanWait,
	// bus.ExpiredGrace).
	Close(ctx context.Context) error
}

// Sink takes a process's session events: a bus.Sink that also accepts
// redelivery of an event already written (a recorded ack re-sent).
type Sink interface {
	bus.Sink
	bus.Redeliverer
}

// Binding is a claimed session as the roster shows it.
type Binding struct {
	Session  string   `json:"session"`
	Source   string   `json:"source"`
	Agent    string   `json:"agent,omitempty"`
	Instance string   `json:"instance,omitempty"`
	Accepts  []string `json:"accepts,omitempty"`
}

// Target takes the commands routed to a claimed session: the bridge hands
// them to the session's control intake.
type Target interface {
	// Submit hands cmd, whose exact bytes are raw, to the session; by is
	// who sent it, as the front door that took it authenticated them.
	Submit(cmd aep.Event, raw []byte, by Principal) Outcome
}

// Outcome is what a session did with a command.
type Outcome struct {
	// Code and Detail are a connection-scoped refusal (AEP-0004 §4.2),
	// or "" when the session made its ack decision.
	Code, Detail string
	// Ack is the exact encoding of the command's ack, when it has one: the
	// recorded one on a redelivery (Duplicate).
	Ack       []byte
	Duplicate bool
}

// Rights a Principal may hold, by name as they travel between members.
const (
	RightRead   = "read"
	RightAnswer = "answer"
	RightEmit   = "emit"
)

// Principal is who sent a command, as the front door that took it
// authenticated them: it travels with the command to the session's owner,
// which records it and checks it again. It is never taken from the
// command itself.
type Principal struct {
	// Name is the operator's name; "" for the shared token's holder.
	Name string `json:"name,omitempty"`
	// Rights are what it may do (RightRead, RightAnswer, RightEmit).
	Rights []string `json:"rights"`
	// Scopes are the server globs it may see and answer; nil means all.
	Scopes []string `json:"scopes,omitempty"`
	// Groups are a named operator's identity groups, which an approval
	// policy's approvers may name; nil for everyone else.
	Groups []string `json:"groups,omitempty"`
}

// TokenHolder is the shared token's holder: every right, every scope.
func TokenHolder() Principal {
	return Principal{Rights: []string{RightRead, RightAnswer, RightEmit}}
}

// May reports whether p holds right.
func (p Principal) May(right string) bool { return slices.Contains(p.Rights, right) }

// mayCommand returns the refusal of a command p may not send, or "".
func mayCommand(p Principal) (code, detail string) {
	if !p.May(RightAnswer) {
		return "unauthorized", "this connection may not send commands: its credential has no answer right"
	}
	return "", ""
}

package authority

import (
	"fmt"
	"slices"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// Rights are what a principal may do.
type Rights uint8

const (
	// Emit writes events, into the sessions and sources the Table lets it.
	Emit Rights = 1 << iota
	// Command sends commands: answers questions.
	Command
	// Read receives events and open questions.
	Read
)

// All is every right: what the shared token grants.
const All = Emit | Command | Read

// Principal is who acts on a connection or request, as the endpoint
// authenticated it. The zero Principal may do nothing.
type Principal struct {
	// Proved is set for a bridge that proved the token at /join (it never
	// sent it); unset for a holder of the bearer token.
	Proved bool
	// Key is the fingerprint of the session key it proved with the token
	// (proof.Hub.Key), or "".
	Key string
	// Rights are what it may do.
	Rights Rights
	// Name names it on the records it makes: the by of its answers. It is
	// an operator's name (identity.ValidName), or TokenHolderName.
	Name string
	// Operator is set for a named operator (identity.Operator): its Name
	// is its own, and Scope says which servers it reaches.
	Operator bool
	// Scope is the MCP servers it reaches, by the name a session shows;
	// the zero Scope reaches every server.
	Scope identity.Scope
	// Groups are a named operator's groups (identity.Operator.Groups),
	// which a policy's approvers may name; nil for everyone else.
	Groups []string
}

// TokenHolderName is the name on what the shared token's holder does: by
// on its answers. No operator may take it (identity.ValidName refuses
// spaces).
const TokenHolderName = "token holder"

// TokenHolder is whoever presents the shared bearer token: every right.
func TokenHolder() Principal { return Principal{Rights: All, Name: TokenHolderName} }

// Bridge is a peer that proved the token at /join, and the session key
// key with it ("" for none): every right.
func Bridge(key string) Principal {
	return Principal{Proved: true, Key: key, Rights: All, Name: TokenHolderName}
}

// Operator is the named operator o: it reads the questions in its scope,
// and answers them when it may; it never emits events.
func Operator(o identity.Operator) Principal {
	r := Read
	if o.Can == identity.Answer {
		r |= Command
	}
	return Principal{Rights: r, Name: o.Name, Operator: true, Scope: o.Servers, Groups: slices.Clone(o.Groups)}
}

// Servers says which MCP server a session fronts: the name its questions
// show (bus.Hub.ServerOf). known is false when nothing says so yet, or
// the session's questions named two servers.
type Servers interface {
	ServerOf(session string) (server string, known bool)
}

// Sees reports whether p may see ev, on every surface: live, in replay, in
// the open-question snapshot. A scoped principal sees an
// attention.requested whose subject (its server) is in scope, and any
// other event of a session whose server, as servers knows it, is in
// scope; an event of a session whose server is not known, or of no
// session, it does not see: failing closed.
func (p Principal) Sees(ev *aep.Event, servers Servers) bool {
	switch {
	case p.Rights&Read == 0:
		return false
	case p.Scope.All():
		return true
	}
	server, known := servers.ServerOf(ev.Session)
	if ev.Type == "attention.requested" && ev.Session != "" {
		// Its subject names its server; a session that named another
		// first is never shown under this one.
		return (!known || server == ev.Subject) && p.Scope.Allows(ev.Subject)
	}
	return known && p.Scope.Allows(server)
}

// SeesSession reports whether p may see the session at all (the roster's
// entries): its server is known and in p's scope.
func (p Principal) SeesSession(session string, servers Servers) bool {
	switch {
	case p.Rights&Read == 0:
		return false
	case p.Scope.All():
		return true
	}
	server, known := servers.ServerOf(session)
	return known && p.Scope.Allows(server)
}

// Filter is Sees as a subscription filter, or nil when p sees every
// event, so a surface adds nothing to its own filter.
func (p Principal) Filter(servers Servers) func(ev *aep.Event) bool {
	if p.Rights&Read != 0 && p.Scope.All() {
		return nil
	}
	return func(ev *aep.Event) bool { return p.Sees(ev, servers) }
}

// MayCommand returns why p may not send cmd, or nil. A scoped principal
// commands only sessions whose server is known and in scope
// (ReasonScope), which the sender's connection is told, the command never
// reaching the session; one that may see the session but not answer is
// refused ReasonReadOnly, on its connection too: a reader's commands
// never reach a session's history.
func (p Principal) MayCommand(cmd *aep.Event, servers Servers) *Refusal {
	if !p.Scope.All() {
		server, known := servers.ServerOf(cmd.Session)
		if !known || !p.Scope.Allows(server) {
			return refuse(ReasonScope, "operator %q reaches the questions of servers %s only, and this session's server is not among them (or not known yet); nothing was sent",
				p.Name, p.Scope)
		}
	}
	switch {
	case p.Rights&Command != 0:
		return nil
	case p.Operator && p.Rights&Read != 0:
		return refuse(ReasonReadOnly, "operator %q may read, not answer: its right is read; an operator that answers is added with operators add NAME --can answer", p.Name)
	}
	return refuse(ReasonNoRight, "this connection may not send commands")
}

// Reason says why the Table or a Principal refused.
type Reason int

// The reasons of a Refusal.
const (
	ReasonNoRight      Reason = iota + 1 // the principal lacks the right (a consumer's event)
	ReasonLocalSession                   // a session of this process
	ReasonLocalSource                    // a source of this process
	ReasonKeySession                     // a session certified to a key the writer did not prove
	ReasonKeySource                      // a source naming such a session
	ReasonJoinedSource                   // a joined session under another source
	ReasonJoinedOnly                     // a joined session, from outside /join
	ReasonJoinedSecret                   // a joined session, without its resume secret
	ReasonLimit                          // the connection writes all the sources or sessions it may
	ReasonSourceLive                     // a source another live connection writes
	ReasonSourceHeld                     // a source held for an emitter that is away
	ReasonNoRoute                        // no claim of the session (Route)
	ReasonAmbiguous                      // more than one claim (Route)
	ReasonScope                          // a session outside an operator's scope
	ReasonReadOnly                       // an operator that may read, not answer
	ReasonOperator                       // an operator's event: operators never emit
)

var reasonNames = map[Reason]string{
	ReasonNoRight: "no-right", ReasonLocalSession: "local-session", ReasonLocalSource: "local-source",
	ReasonKeySession: "key-session", ReasonKeySource: "key-source", ReasonJoinedSource: "joined-source",
	ReasonJoinedOnly: "joined-only", ReasonJoinedSecret: "joined-secret", ReasonLimit: "limit",
	ReasonSourceLive: "source-live", ReasonSourceHeld: "source-held", ReasonNoRoute: "no-route", ReasonAmbiguous: "ambiguous",
	ReasonScope: "scope", ReasonReadOnly: "read-only", ReasonOperator: "operator",
}

// String names the reason, for logs and tests.
func (r Reason) String() string {
	if n, ok := reasonNames[r]; ok {
		return n
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Refusal is a decision against an event or a command: why, for tests
// and logs, and a detail for the peer that says what to do.
type Refusal struct {
	Reason Reason
	Detail string
}

func (r *Refusal) Error() string { return r.Detail }

// Code is the wire code of the refusal: "no-route" and "ambiguous" for
// commands that cannot be routed (AEP-0004 §4.5), "unauthorized" for the
// rest.
func (r *Refusal) Code() string {
	switch r.Reason {
	case ReasonNoRoute:
		return "no-route"
	case ReasonAmbiguous:
		return "ambiguous"
	}
	return "unauthorized"
}

func refuse(r Reason, format string, a ...any) *Refusal {
	return &Refusal{Reason: r, Detail: fmt.Sprintf(format, a...)}
}

package authority

import (
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
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
}

// TokenHolder is whoever presents the shared bearer token: every right.
func TokenHolder() Principal { return Principal{Rights: All} }

// Bridge is a peer that proved the token at /join, and the session key
// key with it ("" for none): every right.
func Bridge(key string) Principal { return Principal{Proved: true, Key: key, Rights: All} }

// Sees reports whether p may see ev, on every surface: live, in replay, in
// the open-question snapshot.
func (p Principal) Sees(ev *aep.Event) bool { return p.Rights&Read != 0 }

// Filter is Sees as a subscription filter, or nil when p sees every
// event, so a surface adds nothing to its own filter.
func (p Principal) Filter() func(ev *aep.Event) bool {
	if p.Rights&Read != 0 {
		return nil
	}
	return p.Sees
}

// MayCommand returns why p may not send cmd, or nil.
func (p Principal) MayCommand(cmd *aep.Event) *Refusal {
	if p.Rights&Command == 0 {
		return refuse(ReasonNoRight, "this connection may not send commands")
	}
	return nil
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
)

var reasonNames = map[Reason]string{
	ReasonNoRight: "no-right", ReasonLocalSession: "local-session", ReasonLocalSource: "local-source",
	ReasonKeySession: "key-session", ReasonKeySource: "key-source", ReasonJoinedSource: "joined-source",
	ReasonJoinedOnly: "joined-only", ReasonJoinedSecret: "joined-secret", ReasonLimit: "limit",
	ReasonSourceLive: "source-live", ReasonSourceHeld: "source-held", ReasonNoRoute: "no-route", ReasonAmbiguous: "ambiguous",
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

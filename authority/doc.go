// Package authority decides who may do what on the AEP endpoint: who may
// write which session and source, who takes a session's commands, and
// who may see and command at all. Every surface of the endpoint (the
// WebSocket binding, POST /events, the SSE stream, command routing, the
// roster) asks it; none keeps rules of its own.
//
// It is data and one lock, no I/O:
//   - a Principal is who acts, as the endpoint authenticated it: the shared
//     token's holder over a bearer token or a POST, a bridge that proved
//     the token at /join, and the session key it proved with it. Its
//     Rights say what it may do; Sees and MayCommand are the visibility
//     and command checks, asked once per subscription and per command;
//   - a Table holds what principals hold: the sessions of this process,
//     the sources live connections write, the sessions joined bridges
//     write, the claims commands are routed by. Write decides one event,
//     Route one command, each with a typed Refusal when it says no.
//
// The rules Write applies, in order (DESIGN.md, threat model):
//   - a connection that said hello as a consumer sends commands, never
//     events;
//   - the sessions of this process (AddLocal) are written only by their
//     bridge: no connection may write their session name or their source,
//     live or among the most recently ended (RetiredLocal);
//   - a session whose id is certified to a bridge's session key
//     (proof.Key.SessionID), and a source that names one, are written only
//     by a /join connection whose token proof also proved that key: on any
//     hub, restarted or not, from the id alone;
//   - a session a joined bridge writes is bound to the source it first
//     wrote it under and to that connection's resume secret: nobody writes
//     it under another source, and only a /join connection presenting the
//     secret writes it at all, while the bridge is linked and, among the
//     RetiredJoined most recently left, after; its source stays held for
//     the bridge as long, open questions or not;
//   - a source a live connection writes is that connection's: no other,
//     and no POST, writes it, unless it is the same emitter reconnected
//     (it presents the resume secret of the connection that wrote it; a
//     joined source only through /join), which then takes over what the
//     old connection wrote (Effects.Replaced). When the connection goes
//     while the source has open questions, the source waits for the same
//     emitter to come back, until its questions leave the open set;
//   - a joined bridge beats /socket: when it first writes a session that
//     /socket emitters (or POSTs) wrote before it, it takes the session's
//     source from them, their claims on the session go, and what they left
//     open in it leaves the open set (Effects);
//   - one connection writes at most MaxSourcesPerConn sources and, through
//     /join, as many sessions.
//
// Two /socket emitters with different sources that name the same session
// are both legitimate: Route refuses commands to that session as
// ambiguous (AEP-0004 §4.5), and delivers them to neither.
//
// Identities, rights and scopes are the Principal's, not the Table's: a
// named operator (Operator) is a Principal with a Name, Rights without
// Emit (Read, or Read and Command) and a Scope of server globs. Sees and
// MayCommand consult the scope through Servers, which says which MCP
// server a session fronts (the hub learns it from the session's
// questions): a scoped principal sees, and commands, only sessions whose
// server is known and in scope, failing closed. The token's holder and a
// joined bridge are named TokenHolderName, and reach every server. A
// named gateway client will be a Principal its sessions are bound to: the
// Table's rules already bind sessions to what a connection proved (its
// key and resume secret), the shape a client binding takes.
package authority

// Package endpoint is the bridge's AEP endpoint: the HTTP server that
// operators and other bridges connect to. It serves the discovery document,
// the WebSocket duplex binding (hello, subscriptions, roster, commands), the
// SSE stream, event ingest, /healthz, and mounts the operators' inbox page.
//
// Every surface but /healthz, the inbox page and public discovery needs a
// credential: the shared token, a named operator's credential (package
// identity), or, from a trusted reverse proxy's address, the operator
// name its header carries (operators.go). Each authenticates a principal
// (package authority) that every surface asks: a named operator sees and
// commands only the sessions of the MCP servers in its scope, and its
// open connections close when its record is revoked, changed or expires
// (SetOperators).
//
// Every request first passes a guard: a Host that names neither the
// address the request arrived on, localhost nor a loopback IP (on that
// port), nor an allowed host, is refused (the DNS-rebinding defence), and so
// is a browser request whose Origin is neither the endpoint's own nor an
// allowed one; a request body has a read deadline. Other bridges join at
// /join, where each side proves it knows the token before anything flows
// (package proof); the token never crosses the wire there.
//
// It sits on the return flow (bus → control → attention): it fans the hub's
// events out to subscribers, each subscription starting with the open
// questions it matches, and routes each command to the one session that
// claims it, through the small Target interface, with who sent it (the
// principal's name, which the session records as who answered); it never
// decides a command itself. A command for an emitter on another
// connection travels byte-identically, after a sender frame naming who
// sent it when the emitter advertised it (aep.FrameSender). Who may write what, and who takes which commands, it asks
// package authority on every surface: the sessions of this process are
// written only by their bridge, a source only by the one live connection
// that writes it, a question's lifecycle only by its owner (bus), and
// consumers send commands, never events. Everything a peer sends is
// bounded: each event in bytes, commands and requests in rate, with one
// reply for each refused.
//
// Spec sections: AEP-0002 §7 (the attention lifecycle); AEP-0003 §3
// (bindings: §3.2 ingest, §3.3 SSE, §3.4 discovery, §3.5 WebSocket and its
// liveness), §4 and §4.1 (hello, roster), §4 rule 6 (the token proof and the
// open-question snapshot advertised under capabilities.experimental), §5
// (replay), §6 (attr-match subscriptions), §8 (authentication,
// backpressure); AEP-0004 §4 (command routing, connection-scoped refusals,
// §4.5 ambiguity).
package endpoint

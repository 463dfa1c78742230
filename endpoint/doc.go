// Package endpoint is the bridge's AEP endpoint: the HTTP server that
// operators and other bridges connect to. It serves the discovery document,
// the WebSocket duplex binding (hello, subscriptions, roster, commands), the
// SSE stream, event ingest, /healthz, and mounts the operators' inbox page.
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
// events out to subscribers and routes each command to the one session that
// claims it, through the small Target interface; it never decides a command
// itself.
//
// Spec sections: AEP-0003 §3 (bindings: §3.2 ingest, §3.3 SSE, §3.4
// discovery, §3.5 WebSocket), §4 and §4.1 (hello, roster), §5 (replay), §6
// (attr-match subscriptions), §8 (authentication, backpressure), §4 rule 6
// (the token proof advertised under capabilities.experimental); AEP-0004 §4
// (command routing and connection-scoped refusals).
package endpoint

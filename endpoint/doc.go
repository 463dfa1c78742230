// Package endpoint is the bridge's AEP endpoint: the HTTP server that
// operators and other bridges connect to. It serves the discovery document,
// the WebSocket duplex binding (hello, subscriptions, roster, commands), the
// SSE stream, event ingest, /healthz, and mounts the operators' inbox page.
//
// It sits on the return flow (bus → control → attention): it fans the hub's
// events out to subscribers and routes each command to the one session that
// claims it, through the small Target interface; it never decides a command
// itself.
//
// Spec sections: AEP-0003 §3 (bindings: §3.2 ingest, §3.3 SSE, §3.4
// discovery, §3.5 WebSocket), §4 and §4.1 (hello, roster), §5 (replay), §6
// (attr-match subscriptions), §8 (authentication, backpressure); AEP-0004 §4
// (command routing and connection-scoped refusals).
package endpoint

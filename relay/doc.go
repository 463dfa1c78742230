// Package relay is the bridge's outbound AEP link: a WebSocket connection to
// an AEP relay, or to the endpoint of another bridge that got the listen
// port first (hub mode), on which this bridge is an emitter. Events go out
// on it, commands for this bridge's sessions come back on it, and it
// survives restarts on either side: events queue while it is down, it
// reconnects with backoff, and pending questions are re-announced with
// their original ids.
//
// It sits at the end of the outbound flow (a Sink of the session emitters)
// and the start of the return flow (commands go to a Target).
//
// Spec sections: AEP-0003 §3.5 and §4 (the WebSocket binding and hello, as
// an emitter), §5 (redelivery), AEP-0004 §4 (commands routed by a relay).
package relay

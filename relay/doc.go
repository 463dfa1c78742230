// Package relay is the bridge's outbound AEP link: a WebSocket connection to
// an AEP relay, or to the endpoint of another bridge that got the listen
// port first (hub mode), on which this bridge is an emitter. Events go out
// on it, commands for this bridge's sessions come back on it, and it
// survives restarts on either side: events queue while it is down, it
// reconnects with backoff, and pending questions are re-announced with
// their original ids. An event larger than the peer takes per event is
// skipped with a logged reason (never its content) instead of being sent
// and getting the link closed, which would re-announce the same question,
// and be closed again, on every reconnect.
//
// The token never goes to an unproven peer. Before each connection the link
// asks the peer's discovery, without credentials, whether it offers the
// token proof (package proof); if so, the link proves the token at
// {base}/join and the token never crosses the wire, and from then on the
// link never sends it in clear to that address. A peer without the proof
// gets the bearer token only over TLS or on a loopback address, and the hub
// on the listen port (JoinHub) never: it must prove the token. A link over
// plain ws:// off this machine is refused even to a peer that proves the
// token, since everything after the proof would be cleartext, unless
// LinkOptions.PlainRemote allows it (--relay-allow-plain).
//
// It sits at the end of the outbound flow (a Sink of the session emitters)
// and the start of the return flow (commands go to a Target).
//
// Spec sections: AEP-0003 §3.4 (discovery), §3.5 and §4 (the WebSocket
// binding and hello, as an emitter; the proof is advertised under
// capabilities.experimental, §4 rule 6), §5 (redelivery), §8.1 (TLS and
// bearer tokens off-host), AEP-0004 §4 (commands routed by a relay).
package relay

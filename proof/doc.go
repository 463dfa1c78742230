// Package proof is the token proof: the mutual challenge-response by which a
// bridge and the hub or relay it links to each show that they know the
// shared bearer token, before anything else flows and without the token
// ever leaving either process.
//
// The exchange runs on a WebSocket at {base}/join, beside {base}/socket,
// before the AEP hello (AEP-0003 §4). The endpoint advertises it in its
// discovery document and hello under capabilities.experimental (AEP-0003
// §3.4, §4 rule 6) as {"token-proof":{"versions":[1]}}:
//
//	bridge → hub   {"type":"proof-challenge","v":1,"nonce":Nb}
//	hub → bridge   {"type":"proof-response","v":1,"nonce":Nh,"mac":Mh,"host":H}
//	bridge → hub   {"type":"proof-finish","v":1,"mac":Mb}
//
// Nb and Nh are 32 fresh random bytes from each side. Each MAC is
// HMAC-SHA256 keyed with the token over a length-prefixed transcript: the
// protocol label, a label naming the direction ("hub" or "bridge", so a
// proof reflected back to its sender never verifies), the Host the bridge
// dialed (so a proof obtained from a hub on another address does not verify
// here), and both nonces (so every proof is bound to one connection).
// The hub proves first: a peer that does not know the token learns nothing
// from the bridge but a random nonce. MACs are compared in constant time.
//
// The package is pure: no I/O, no goroutines. The relay package runs the
// bridge's side over a connection, the endpoint package the hub's side.
package proof

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
// The bridge's finish may also prove its session key (Key): an Ed25519
// key pair made once per bridge process, whose fingerprint ends the id of
// every session the bridge names (Key.SessionID: the id, ".k", 24
// lowercase base32 characters). The finish then carries the public key
// ("key") and its signature ("sig") of the transcript above, labelled
// "bridge-key"; the hub verifies it (Hub.Key) and refuses the whole
// finish when it does not verify. A hub that has never seen the bridge,
// one restarted since, say, can thus tell that a connection may write a
// session, from the session's id alone: no state to keep or lose, and a
// token holder without the key cannot take the session. The members are
// optional: a hub that does not know them ignores them, and a bridge that
// sends none proves no key.
//
// The package is pure: no I/O, no goroutines. The relay package runs the
// bridge's side over a connection, the endpoint package the hub's side.
package proof

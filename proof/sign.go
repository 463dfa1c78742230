package proof

import (
	"crypto/ed25519"
	"encoding/binary"
)

// statementLabel starts every statement a key signs (Sign): its
// transcript, length-prefixed part by part like the token proof's, can
// never be read as one of the exchange's, whose label differs.
const statementLabel = "aep-mcp-bridge statement v1"

// statement is the transcript Sign signs: the label, the domain, then
// each part, each length-prefixed so no two lists of parts share one.
func statement(domain string, parts [][]byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(statementLabel)))
	out = append(out, statementLabel...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(domain)))
	out = append(out, domain...)
	for _, p := range parts {
		out = binary.BigEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

// Sign signs what the bridge states on a medium others can write to
// (the operator plane on NATS): domain names what kind of statement it
// is, so a signature of one kind never verifies as another, and parts are
// its content. Verify checks it against PublicKey.
func (k *Key) Sign(domain string, parts ...[]byte) []byte {
	return ed25519.Sign(k.priv, statement(domain, parts))
}

// PublicKey returns the key's public half, which others verify its
// statements with; FingerprintOf names it as the key's sessions do.
func (k *Key) PublicKey() ed25519.PublicKey { return k.public() }

// FingerprintOf returns the fingerprint of a public key: what the ids of
// the sessions certified to it end with (Key.SessionID), or "" when pub
// is not an Ed25519 public key.
func FingerprintOf(pub ed25519.PublicKey) string {
	if len(pub) != ed25519.PublicKeySize {
		return ""
	}
	return fingerprint(pub)
}

// Verify reports whether sig is pub's signature of the statement of
// domain and parts (Key.Sign).
func Verify(pub ed25519.PublicKey, sig []byte, domain string, parts ...[]byte) bool {
	if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(pub, statement(domain, parts), sig)
}

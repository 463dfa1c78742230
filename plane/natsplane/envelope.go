package natsplane

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Kinds of signed statements a member puts on the plane. Each is signed
// for its kind, the plane's prefix and the name it is put under (a
// subject token or a key), so none can be moved elsewhere and still
// verify.
const (
	kindEvent    byte = 'e' // an event of a session: the stream, redelivery
	kindOpen     byte = 'o' // an open question (its event's stream sequence, then its envelope)
	kindRecord   byte = 'c' // a command's recorded ack (wraps the ack's envelope)
	kindBinding  byte = 'b' // a claimed session
	kindPresence byte = 'p' // a member's heartbeat
	kindRelay    byte = 'r' // what a door's emitter wrote, MAC'd with the fleet's token (relay.go)
)

// envelopeMagic starts every signed envelope: format version 1.
var envelopeMagic = [4]byte{'A', 'E', 'P', 1}

// envelopeHead is the fixed part of an envelope: magic, kind, the time it
// was signed (Unix nanoseconds), the signer's public key and signature.
const envelopeHead = 4 + 1 + 8 + ed25519.PublicKeySize + ed25519.SignatureSize

// envelope is one signed statement as read off the plane.
type envelope struct {
	kind     byte
	signedAt time.Time
	pub      ed25519.PublicKey
	// fp is the fingerprint of pub: the key the signer's sessions are
	// certified to.
	fp   string
	body []byte
}

// seal signs body as a statement of kind under name, for the plane named
// by prefix, at now.
func seal(key *proof.Key, kind byte, prefix, name string, now time.Time, body []byte) []byte {
	at := binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano()))
	sig := key.Sign(domainOf(kind), []byte(prefix), []byte(name), at, body)
	out := make([]byte, 0, envelopeHead+len(body))
	out = append(out, envelopeMagic[:]...)
	out = append(out, kind)
	out = append(out, at...)
	out = append(out, key.PublicKey()...)
	out = append(out, sig...)
	return append(out, body...)
}

// domainOf names a kind's statements for the signature.
func domainOf(kind byte) string { return "operator plane " + string(kind) }

// errEnvelope is every envelope that does not open: malformed, of another
// kind, or not signed by its key for this name and plane.
var errEnvelope = errors.New("not a signed statement of this plane")

// open checks that b is a statement of kind, signed for prefix and name,
// and returns it. It never trusts anything in b before the signature
// verifies, and keeps no reference to b's head.
func open(b []byte, kind byte, prefix, name string) (envelope, error) {
	if len(b) < envelopeHead || [4]byte(b[:4]) != envelopeMagic {
		return envelope{}, fmt.Errorf("%w: too short or no magic", errEnvelope)
	}
	if b[4] != kind {
		return envelope{}, fmt.Errorf("%w: kind %q, want %q", errEnvelope, b[4], kind)
	}
	at := b[5:13]
	pub := ed25519.PublicKey(append([]byte(nil), b[13:13+ed25519.PublicKeySize]...))
	sig := b[13+ed25519.PublicKeySize : envelopeHead]
	body := b[envelopeHead:]
	if !proof.Verify(pub, sig, domainOf(kind), []byte(prefix), []byte(name), at, body) {
		return envelope{}, fmt.Errorf("%w: the signature does not verify", errEnvelope)
	}
	return envelope{kind: kind, signedAt: time.Unix(0, int64(binary.BigEndian.Uint64(at))), pub: pub,
		fp: proof.FingerprintOf(pub), body: body}, nil
}

// openBody is the body of an open question's statement: the sequence the
// events stream stored its event at (0 when not known, a question stated
// again), then the event's envelope.
func openBody(seq uint64, inner []byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, seq), inner...)
}

// parseOpenBody reads an open question's statement body.
func parseOpenBody(b []byte) (seq uint64, inner []byte, err error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%w: an open question without its sequence", errEnvelope)
	}
	return binary.BigEndian.Uint64(b[:8]), b[8:], nil
}

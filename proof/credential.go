package proof

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"io"
)

// The credential proof is the same exchange with an operator's
// credential (package identity) in place of the token, so an operator's
// command line reaches a bridge's endpoint the way the token's holder's
// does, proving without ever sending:
//
//	operator → hub   {"type":"proof-challenge","v":1,"nonce":No,"credential":ID}
//	hub → operator   {"type":"proof-response","v":1,"nonce":Nh,"mac":Mh,"host":H,"salt":S}
//	operator → hub   {"type":"proof-finish","v":1,"mac":Mo}
//
// ID is the credential's public id. Both MACs are keyed with the
// credential's verifier hash (what the hub stores; the operator derives it
// from its credential and the salt S), and their direction labels name the
// id, so a credential proof never verifies as a token proof, nor as
// another credential's. A hub that does not know the id answers all the
// same, with a random salt and key, so a peer learns nothing of which ids
// exist; its finish then never verifies. A credential proof proves no
// session key: operators never emit.

// maxCredentialID bounds a credential id in a challenge.
const maxCredentialID = 64

// credentialDirection is a direction label for a credential proof.
func credentialDirection(direction, id string) string { return direction + " credential " + id }

// NewCredentialBridge starts a credential proof with the hub at host:
// id is the credential's public id, and derive returns the key the
// credential gives under the salt the hub sends (identity.Presented.Key).
// It returns the challenge frame to send first.
func NewCredentialBridge(id string, derive func(salt []byte) []byte, host string, random io.Reader) (*Bridge, []byte, error) {
	if id == "" || len(id) > maxCredentialID || derive == nil {
		return nil, nil, errors.New("the credential proof needs the credential's id and its key derivation")
	}
	n, err := nonce(random)
	if err != nil {
		return nil, nil, err
	}
	b := &Bridge{host: host, nonce: n, credential: id, derive: derive}
	return b, encode(Frame{Type: TypeChallenge, V: Version, Nonce: b64.EncodeToString(n), Credential: id}), nil
}

// CredentialLookup returns the salt and key of the credential whose
// public id is id, or ok false when there is none (revoked, expired,
// never issued).
type CredentialLookup func(id string) (salt, key []byte, ok bool)

// AcceptCredentials lets the peer prove an operator credential instead of
// the token, looked up with lookup. Call it before Challenge.
func (h *Hub) AcceptCredentials(lookup CredentialLookup) { h.lookup = lookup }

// Credential returns the id of the credential the peer proved, or "" (it
// proved the token). Only a connection whose Finish succeeded has one.
func (h *Hub) Credential() string {
	if h.state != 3 {
		return ""
	}
	return h.credential
}

// credentialChallenge takes a challenge that names credential id: the
// hub's key becomes the credential's, or a random one when the id is
// unknown.
func (h *Hub) credentialChallenge(id string) ([]byte, *Error) {
	if h.lookup == nil {
		return nil, refuse(TypeChallenge, "this endpoint takes the token proof only, not an operator credential's")
	}
	if len(id) > maxCredentialID {
		return nil, refuse(TypeChallenge, "the credential id is %d bytes; at most %d are allowed", len(id), maxCredentialID)
	}
	salt, key, ok := h.lookup(id)
	if !ok {
		salt, key = make([]byte, 16), make([]byte, 32)
		rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
		rand.Read(key)
	}
	h.token, h.credential, h.known = key, id, ok
	return salt, nil
}

// verifyCredential checks a credential proof's finish.
func (h *Hub) verifyCredential(f Frame, got []byte) *Error {
	want := mac(h.token, credentialDirection(bridgeLabel, h.credential), h.host, h.bridgeNonce, h.nonce)
	if !hmac.Equal(got, want) || !h.known {
		return &Error{Step: TypeFinish, Reason: "the operator's proof does not verify: it does not hold this credential, or the credential was revoked", err: ErrMismatch}
	}
	if f.Key != "" || f.Sig != "" {
		return refuse(TypeFinish, "a credential proof proves no session key")
	}
	return nil
}

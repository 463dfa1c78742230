package proof

import (
	"crypto/ed25519"
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Bridge is the dialing side of one exchange: the bridge that joins a hub
// or links to a relay. It proves the token only after the hub has.
//
// A Bridge is used by one goroutine, for one connection.
type Bridge struct {
	token []byte
	host  string
	nonce []byte
	key   *Key
	done  bool
	// credential and derive are set for a credential proof: token is
	// derived from the salt the hub sends.
	credential string
	derive     func(salt []byte) []byte
}

// Claim makes the bridge's proof also prove key, so the hub lets this
// connection write the sessions certified to it (Key.SessionID). Call it
// before Verify.
func (b *Bridge) Claim(key *Key) { b.key = key }

// NewBridge starts an exchange with the hub the bridge dialed at host (the
// Host of the request, as in the URL). It returns the challenge frame to
// send first.
func NewBridge(token, host string, random io.Reader) (*Bridge, []byte, error) {
	if token == "" {
		return nil, nil, errors.New("the token proof needs a token")
	}
	n, err := nonce(random)
	if err != nil {
		return nil, nil, err
	}
	b := &Bridge{token: []byte(token), host: host, nonce: n}
	return b, encode(Frame{Type: TypeChallenge, V: Version, Nonce: b64.EncodeToString(n)}), nil
}

// Verify checks the hub's response. When the hub proved the token, it
// returns the finish frame that carries the bridge's own proof; otherwise a
// *Error, wrapping ErrMismatch when the hub's proof does not verify.
func (b *Bridge) Verify(response []byte) ([]byte, error) {
	if b.done {
		return nil, refuse(TypeResponse, "the exchange already ended")
	}
	b.done = true // one response per exchange, verified or not
	f, ferr := decode(response, TypeResponse)
	if ferr != nil {
		return nil, ferr
	}
	hubNonce, ferr := decodeBytes(TypeResponse, "hub's nonce", f.Nonce, NonceSize)
	if ferr != nil {
		return nil, ferr
	}
	got, ferr := decodeBytes(TypeResponse, "hub's proof", f.MAC, 32)
	if ferr != nil {
		return nil, ferr
	}
	if hmac.Equal(hubNonce, b.nonce) {
		return nil, refuse(TypeResponse, "the hub echoed the bridge's nonce")
	}
	hubDir, bridgeDir, what := hubLabel, bridgeLabel, "this token"
	if b.derive != nil {
		salt, err := b64.DecodeString(f.Salt)
		if err != nil || len(salt) == 0 || len(salt) > 64 {
			return nil, refuse(TypeResponse, "the hub sent no salt for the credential: it takes the token proof only")
		}
		b.token = b.derive(salt)
		hubDir, bridgeDir, what = credentialDirection(hubLabel, b.credential), credentialDirection(bridgeLabel, b.credential), "this credential (or it was revoked)"
	}
	if !hmac.Equal(got, mac(b.token, hubDir, b.host, b.nonce, hubNonce)) {
		reason := "the hub's proof does not verify: it does not know " + what
		if f.Host != "" && !strings.EqualFold(f.Host, b.host) {
			reason = fmt.Sprintf("the hub's proof does not verify: it bound it to host %s, this bridge dialed %s (a proxy that rewrites Host breaks the proof), or it does not know %s",
				quote(f.Host), quote(b.host), what)
		}
		return nil, &Error{Step: TypeResponse, Reason: reason, err: ErrMismatch}
	}
	finish := Frame{Type: TypeFinish, V: Version, MAC: b64.EncodeToString(mac(b.token, bridgeDir, b.host, b.nonce, hubNonce))}
	if b.key != nil && b.derive == nil {
		finish.Key = b64.EncodeToString(b.key.public())
		finish.Sig = b64.EncodeToString(b.key.sign(b.host, b.nonce, hubNonce))
	}
	return encode(finish), nil
}

// Hub is the accepting side of one exchange: the endpoint a bridge joins.
// It proves the token first, then checks the bridge's proof.
//
// A Hub is used by one goroutine, for one connection.
type Hub struct {
	token       []byte
	host        string
	nonce       []byte
	bridgeNonce []byte
	state       int    // 0: awaiting the challenge, 1: awaiting the finish, 2: ended, 3: proved
	key         string // the fingerprint of the key the bridge proved
	// lookup finds operator credentials (AcceptCredentials); credential
	// is the id a challenge named, known whether lookup found it.
	lookup     CredentialLookup
	credential string
	known      bool
}

// NewHub starts an exchange on a connection whose request named host (its
// Host header).
func NewHub(token, host string, random io.Reader) (*Hub, error) {
	if token == "" {
		return nil, errors.New("the token proof needs a token")
	}
	n, err := nonce(random)
	if err != nil {
		return nil, err
	}
	return &Hub{token: []byte(token), host: host, nonce: n}, nil
}

// Challenge reads the bridge's challenge and returns the response that
// carries the hub's proof.
func (h *Hub) Challenge(challenge []byte) ([]byte, error) {
	if h.state != 0 {
		return nil, refuse(TypeChallenge, "the exchange is past its challenge")
	}
	h.state = 2 // until the challenge is read whole
	f, ferr := decode(challenge, TypeChallenge)
	if ferr != nil {
		return nil, ferr
	}
	bn, ferr := decodeBytes(TypeChallenge, "bridge's nonce", f.Nonce, NonceSize)
	if ferr != nil {
		return nil, ferr
	}
	if hmac.Equal(bn, h.nonce) {
		return nil, refuse(TypeChallenge, "the bridge's nonce repeats the hub's")
	}
	response := Frame{Type: TypeResponse, V: Version, Nonce: b64.EncodeToString(h.nonce), Host: h.host}
	direction := hubLabel
	if f.Credential != "" {
		salt, ferr := h.credentialChallenge(f.Credential)
		if ferr != nil {
			return nil, ferr
		}
		response.Salt, direction = b64.EncodeToString(salt), credentialDirection(hubLabel, f.Credential)
	}
	h.bridgeNonce, h.state = bn, 1
	response.MAC = b64.EncodeToString(mac(h.token, direction, h.host, bn, h.nonce))
	return encode(response), nil
}

// Finish checks the bridge's proof. A nil error means the bridge knows the
// token; otherwise a *Error, wrapping ErrMismatch when the proof does not
// verify.
func (h *Hub) Finish(finish []byte) error {
	if h.state != 1 {
		return refuse(TypeFinish, "the exchange has no challenge to finish")
	}
	h.state = 2
	f, ferr := decode(finish, TypeFinish)
	if ferr != nil {
		return ferr
	}
	got, ferr := decodeBytes(TypeFinish, "bridge's proof", f.MAC, 32)
	if ferr != nil {
		return ferr
	}
	if h.credential != "" {
		if ferr := h.verifyCredential(f, got); ferr != nil {
			return ferr
		}
		h.state = 3
		return nil
	}
	if !hmac.Equal(got, mac(h.token, bridgeLabel, h.host, h.bridgeNonce, h.nonce)) {
		return &Error{Step: TypeFinish, Reason: "the bridge's proof does not verify: it does not know this token", err: ErrMismatch}
	}
	if f.Key == "" && f.Sig == "" {
		h.state = 3
		return nil
	}
	pub, ferr := decodeBytes(TypeFinish, "bridge's session key", f.Key, ed25519.PublicKeySize)
	if ferr != nil {
		return ferr
	}
	sig, ferr := decodeBytes(TypeFinish, "bridge's key signature", f.Sig, ed25519.SignatureSize)
	if ferr != nil {
		return ferr
	}
	if !ed25519.Verify(pub, transcript(sigLabel, h.host, h.bridgeNonce, h.nonce), sig) {
		return &Error{Step: TypeFinish, Reason: "the bridge's session key signature does not verify over this exchange", err: ErrMismatch}
	}
	h.key, h.state = fingerprint(pub), 3
	return nil
}

// Key returns the fingerprint of the session key the bridge proved with
// its finish (Bridge.Claim), or "" when it proved none. Only a connection
// whose Finish succeeded has one.
func (h *Hub) Key() string { return h.key }

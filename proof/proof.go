package proof

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Capability is the key under capabilities.experimental that advertises
// the exchange (AEP-0003 §4 rule 6); its value is {"versions":[1]}.
const Capability = "token-proof"

// Version is the version of the exchange this package speaks.
const Version = 1

// Path is the route of the exchange, relative to the endpoint's base (the
// socket URL without its last segment).
const Path = "/join"

// NonceSize is the size of each side's nonce in bytes.
const NonceSize = 32

// MaxFrame bounds a frame of the exchange in bytes; a longer one is refused
// unread.
const MaxFrame = 1024

// Frame types of the exchange. They carry no dot, like every frame of the
// WebSocket binding (AEP-0003 §2).
const (
	TypeChallenge = "proof-challenge"
	TypeResponse  = "proof-response"
	TypeFinish    = "proof-finish"
)

// label is the protocol label every transcript starts with.
const label = "aep-mcp-bridge token-proof v1"

// Direction labels: the hub's proof and the bridge's proof are MACs over
// different transcripts, so neither verifies as the other.
const (
	hubLabel    = "hub"
	bridgeLabel = "bridge"
)

// Frame is one message of the exchange.
type Frame struct {
	Type  string `json:"type"`
	V     int    `json:"v"`
	Nonce string `json:"nonce,omitempty"`
	MAC   string `json:"mac,omitempty"`
	// Host is the Host the hub bound its proof to. It is informational:
	// the bridge verifies against the host it dialed, and names both when
	// they differ (a proxy that rewrites Host breaks the proof).
	Host string `json:"host,omitempty"`
	// Key and Sig, in a finish, prove the bridge's session key: its
	// Ed25519 public key and its signature of the exchange's transcript
	// (see Key). A hub that does not know them ignores them.
	Key string `json:"key,omitempty"`
	Sig string `json:"sig,omitempty"`
	// Credential, in a challenge, is the public id of the operator
	// credential the peer proves instead of the token; Salt, in the
	// response, the salt its key derives with (credential.go).
	Credential string `json:"credential,omitempty"`
	Salt       string `json:"salt,omitempty"`
	// Code and Detail are set when the peer answered with an AEP error
	// frame instead (AEP-0003 §6.5).
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Advertisement is the value of the capability, for a discovery document or
// a hello.
func Advertisement() json.RawMessage {
	return json.RawMessage(`{"` + Capability + `":{"versions":[` + strconv.Itoa(Version) + `]}}`)
}

// Advertised reports whether a capabilities.experimental block offers a
// version of the exchange this package speaks. Anything malformed is
// "not offered".
func Advertised(experimental json.RawMessage) bool {
	var exp map[string]json.RawMessage
	if json.Unmarshal(experimental, &exp) != nil {
		return false
	}
	var tp struct {
		Versions []int `json:"versions"`
	}
	if json.Unmarshal(exp[Capability], &tp) != nil {
		return false
	}
	for _, v := range tp.Versions {
		if v == Version {
			return true
		}
	}
	return false
}

// ErrMismatch is wrapped by every error that says the peer speaks the
// exchange but does not know the token (or proves it for another host).
var ErrMismatch = errors.New("the token proof does not match")

// Error is a refusal of the exchange: the peer sent something that is not
// the expected frame, or a proof that does not verify. It never holds the
// token or a MAC.
type Error struct {
	// Step is the frame that was expected.
	Step string
	// Reason says what was wrong.
	Reason string
	err    error
}

func (e *Error) Error() string { return e.Step + ": " + e.Reason }

// Unwrap returns ErrMismatch for a proof that does not verify.
func (e *Error) Unwrap() error { return e.err }

func refuse(step, format string, a ...any) *Error {
	return &Error{Step: step, Reason: fmt.Sprintf(format, a...)}
}

// mac computes the proof of one side over the connection's transcript.
func mac(token []byte, direction, host string, bridgeNonce, hubNonce []byte) []byte {
	m := hmac.New(sha256.New, token)
	m.Write(transcript(direction, host, bridgeNonce, hubNonce))
	return m.Sum(nil)
}

// transcript is what one side's proof covers: the protocol label, the
// direction, the host the bridge dialed and both nonces, each length-
// prefixed.
func transcript(direction, host string, bridgeNonce, hubNonce []byte) []byte {
	var out []byte
	for _, part := range [][]byte{[]byte(label), []byte(direction), []byte(strings.ToLower(host)), bridgeNonce, hubNonce} {
		out = binary.BigEndian.AppendUint32(out, uint32(len(part)))
		out = append(out, part...)
	}
	return out
}

var b64 = base64.RawURLEncoding

// decode reads a frame of the exchange and checks its type and version.
func decode(b []byte, want string) (Frame, *Error) {
	if len(b) > MaxFrame {
		return Frame{}, refuse(want, "the frame is %d bytes; at most %d are allowed", len(b), MaxFrame)
	}
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		return Frame{}, refuse(want, "the peer did not send a JSON frame")
	}
	switch {
	case f.Type == "error":
		return Frame{}, refuse(want, "the peer refused: %s", quote(f.Code+": "+f.Detail))
	case f.Type != want:
		return Frame{}, refuse(want, "the peer sent a frame of type %s", quote(f.Type))
	case f.V != Version:
		return Frame{}, refuse(want, "the peer speaks version %d of the exchange; this side speaks %d", f.V, Version)
	}
	return f, nil
}

// decodeBytes reads a base64url member of exactly n bytes.
func decodeBytes(step, name, s string, n int) ([]byte, *Error) {
	b, err := b64.DecodeString(s)
	if err != nil || len(b) != n {
		return nil, refuse(step, "the %s is not %d bytes of unpadded base64url", name, n)
	}
	return b, nil
}

// quote makes a peer's string safe to show: quoted, control characters
// escaped, at most 80 bytes of it.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}

// nonce reads NonceSize bytes from random.
func nonce(random io.Reader) ([]byte, error) {
	n := make([]byte, NonceSize)
	if _, err := io.ReadFull(random, n); err != nil {
		return nil, fmt.Errorf("drawing a nonce for the token proof: %w", err)
	}
	return n, nil
}

func encode(f Frame) []byte {
	b, _ := json.Marshal(f) // strings and an int always encode
	return b
}

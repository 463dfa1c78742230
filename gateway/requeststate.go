package gateway

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The requestState a client sees (MCP 2026-07-28 basic/patterns/mrtr).
//
// A one-shot session's server may answer input_required with a
// requestState, which the client echoes on its retry. The gateway never
// hands the server's value to the client, nor routes a retry by it: the
// same value can come from several rounds (a server may return a
// constant), and anyone can send it. Instead the client gets a wrapper
// the gateway minted, sealed with AES-256-GCM under a key every gateway
// of the fleet derives from the secret they share:
//
//	wrapper   = "aepgw1." base64url(nonce[12] ciphertext tag[16])
//	plaintext = round[16] expires[8] client[16] request[16] state
//
// round is 128 random bits naming the round, expires the end of its life
// in Unix milliseconds, client a digest of the principal it was handed to
// (see principal), request a digest of the method and name (or uri) of
// the request whose round it is, and state the server's requestState as
// it was written (any JSON value). The prefix is the additional data, so
// a wrapper of another format version never opens.
//
// On a retry the gateway opens the wrapper and checks, in order, that it
// opens (it was minted by this fleet and not altered), that it has not
// expired, that the request is the one it was minted for, that the
// client is, and that the round is not used yet on this gateway (see
// roundTable); the server then gets its own state back.

// wrapperPrefix begins every wrapper; it names the format's version.
const wrapperPrefix = "aepgw1."

// stateKeyLabel is the HKDF info of the wrapper key: the shared secret
// itself never seals anything.
const stateKeyLabel = "aep-mcp-bridge gateway requestState v1"

// roundID names one input_required round.
type roundID [16]byte

// binding is a digest a wrapper is bound to.
type binding [16]byte

// clientBinding binds a wrapper to the principal it was handed to.
func clientBinding(who principal) binding {
	return digest("client", string(who))
}

// requestBinding binds a wrapper to the request it belongs to: its
// method, and the name or uri it is about.
func requestBinding(method, subject string) binding {
	return digest("request", method+"\x00"+subject)
}

func digest(kind, v string) binding {
	sum := sha256.Sum256([]byte("aep-mcp-bridge " + kind + "\x00" + v))
	return binding(sum[:16])
}

// sealedState is what a wrapper carries.
type sealedState struct {
	round   roundID
	expires time.Time // to the millisecond
	client  binding
	request binding
	state   json.RawMessage // the server's requestState, as written
}

// sealedHead is the length of a plaintext without the state.
const sealedHead = 16 + 8 + 16 + 16

// stateSealer seals and opens wrappers; it is safe for concurrent use.
type stateSealer struct {
	aead cipher.AEAD
}

// newStateSealer derives the wrapper key from secret with HKDF-SHA256 (a
// fleet's gateways share it, so each opens the others' wrappers), or,
// with no secret, makes a random key that only this process knows.
func newStateSealer(secret string) (*stateSealer, error) {
	key := make([]byte, 32)
	if secret == "" {
		rand.Read(key)
	} else {
		k, err := hkdf.Key(sha256.New, []byte(secret), nil, stateKeyLabel, 32)
		if err != nil {
			return nil, fmt.Errorf("deriving the requestState key: %w", err)
		}
		key = k
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("making the requestState cipher: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("making the requestState cipher: %w", err)
	}
	return &stateSealer{aead: aead}, nil
}

// seal returns the wrapper of s.
func (k *stateSealer) seal(s sealedState) string {
	pt := make([]byte, sealedHead, sealedHead+len(s.state))
	copy(pt[0:16], s.round[:])
	binary.BigEndian.PutUint64(pt[16:24], uint64(s.expires.UnixMilli()))
	copy(pt[24:40], s.client[:])
	copy(pt[40:56], s.request[:])
	pt = append(pt, s.state...)
	return wrapperPrefix + base64.RawURLEncoding.EncodeToString(k.aead.Seal(nil, nil, pt, []byte(wrapperPrefix)))
}

// Errors of opening a wrapper; each is what the client is told.
var (
	errNotMinted = errors.New("requestState is not one this gateway (or its fleet) handed out, or it was altered; echo the requestState of the input_required result exactly, or send the request again without one")
	errExpired   = errors.New("requestState expired; send the request again without one to start over")
	errOtherReq  = errors.New("requestState belongs to another request (its method or name differs); echo it only on the retry of the request whose input_required result carried it")
	errOtherWho  = errors.New("requestState was handed out to another client")
	errReplayed  = errors.New("requestState was already used: each input_required result's requestState is good for one retry; send the request again without one to start a new round")
)

// open returns what the wrapper w carries once it checked it, against
// now, the request it came on and the principal that sent it.
func (k *stateSealer) open(w json.RawMessage, now time.Time, request binding, who principal) (sealedState, error) {
	var s string
	if json.Unmarshal(w, &s) != nil {
		return sealedState{}, errNotMinted
	}
	raw, ok := strings.CutPrefix(s, wrapperPrefix)
	if !ok {
		return sealedState{}, errNotMinted
	}
	ct, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return sealedState{}, errNotMinted
	}
	pt, err := k.aead.Open(nil, nil, ct, []byte(wrapperPrefix))
	if err != nil || len(pt) < sealedHead {
		return sealedState{}, errNotMinted
	}
	var out sealedState
	copy(out.round[:], pt[0:16])
	out.expires = time.UnixMilli(int64(binary.BigEndian.Uint64(pt[16:24])))
	copy(out.client[:], pt[24:40])
	copy(out.request[:], pt[40:56])
	out.state = pt[sealedHead:]
	client := clientBinding(who)
	switch {
	case !now.Before(out.expires):
		return sealedState{}, errExpired
	case subtle.ConstantTimeCompare(out.request[:], request[:]) != 1:
		return sealedState{}, errOtherReq
	case subtle.ConstantTimeCompare(out.client[:], client[:]) != 1:
		return sealedState{}, errOtherWho
	}
	return out, nil
}

// newRoundID returns 128 random bits.
func newRoundID() roundID {
	var id roundID
	rand.Read(id[:])
	return id
}

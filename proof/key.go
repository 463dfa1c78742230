package proof

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"io"
	"strings"
)

// Key is a bridge's session key: an Ed25519 key pair made once per
// process. The sessions the bridge names with it (SessionID) carry its
// fingerprint in their id, so a hub that has never seen the bridge, a hub
// restarted since, can still tell who may write them: only a connection
// whose token proof also proves the key (Bridge.Claim, Hub.Key). The
// private key never leaves the process.
//
// A Key is safe for concurrent use.
type Key struct {
	priv ed25519.PrivateKey
	fp   string
}

// FingerprintLen is the length of a key's fingerprint: 120 bits of
// SHA-256 over the public key, in lowercase base32.
const FingerprintLen = 24

// sessionMark separates a session id's own part from the fingerprint of
// the key it is certified to.
const sessionMark = ".k"

// keyLabel starts what a key's fingerprint hashes, and sigLabel names the
// direction of the key's signature in the transcript.
const (
	keyLabel = "aep-mcp-bridge session key v1"
	sigLabel = "bridge-key"
)

var fpEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewKey makes a session key from random (crypto/rand.Reader).
func NewKey(random io.Reader) (*Key, error) {
	_, priv, err := ed25519.GenerateKey(random)
	if err != nil {
		return nil, fmt.Errorf("making the session key: %w", err)
	}
	return &Key{priv: priv, fp: fingerprint(priv.Public().(ed25519.PublicKey))}, nil
}

// fingerprint names a public key.
func fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(append([]byte(keyLabel), pub...))
	return fpEncoding.EncodeToString(sum[:FingerprintLen*5/8])
}

// Fingerprint names the key: what its sessions' ids end with.
func (k *Key) Fingerprint() string { return k.fp }

// SessionID certifies the session id id to the key: id, then ".k" and
// the key's fingerprint (26 characters more). A ULID becomes 52
// characters of [0-9A-Za-z.].
func (k *Key) SessionID(id string) string { return id + sessionMark + k.fp }

// SessionKey returns the fingerprint of the key session is certified to,
// or "" when it is not certified: it does not end with ".k" and a
// fingerprint after at least one character of its own.
func SessionKey(session string) string {
	n := len(sessionMark) + FingerprintLen
	if len(session) <= n || session[len(session)-n:len(session)-FingerprintLen] != sessionMark {
		return ""
	}
	fp := session[len(session)-FingerprintLen:]
	for _, c := range fp {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return ""
		}
	}
	return fp
}

// SourceKey returns the fingerprint of the key the source names a session
// of, or "": a bridge's source ends with its session id
// (aep://{host}/agent/{agent}/session/{session}).
func SourceKey(source string) string {
	return SessionKey(source[strings.LastIndexByte(source, '/')+1:])
}

// sign signs the transcript of one exchange with the key.
func (k *Key) sign(host string, bridgeNonce, hubNonce []byte) []byte {
	return ed25519.Sign(k.priv, transcript(sigLabel, host, bridgeNonce, hubNonce))
}

// public is the key's public half.
func (k *Key) public() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }

package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// Credential prefixes: what a secret scanner looks for, and what says
// which kind of record a credential opens.
const (
	PrefixOperator = "aepop_"
	PrefixClient   = "aepcl_"
)

// Sizes of a credential's parts, in bytes.
const (
	idSize     = 10 // the public id: 80 bits, 16 base32 characters
	secretSize = 32 // the secret: 256 bits
	sumSize    = 4  // CRC-32 (IEEE) of the prefix, id and secret
	saltSize   = 16
	hashSize   = sha256.Size
)

// CredentialLen is the length of every credential: its prefix, then
// base32 (lowercase, unpadded) of the id, the secret and the checksum.
var CredentialLen = len(PrefixOperator) + b32.EncodedLen(idSize+secretSize+sumSize)

// IDLen is the length of a credential's id, as text.
var IDLen = b32.EncodedLen(idSize)

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// hashLabel starts every hashed message, so a verifier is never a hash of
// anything else.
const hashLabel = "aep-mcp-bridge credential v1\x00"

// Kind is the kind of record a credential opens.
type Kind uint8

// The kinds of credentials.
const (
	KindOperator Kind = iota + 1
	KindClient
)

func (k Kind) prefix() string {
	if k == KindClient {
		return PrefixClient
	}
	return PrefixOperator
}

// String names the kind for messages.
func (k Kind) String() string {
	if k == KindClient {
		return "client"
	}
	return "operator"
}

// Presented is a credential as a peer presented it, parsed: its kind, its
// public id and its secret. Its String never shows the secret.
type Presented struct {
	Kind Kind
	// ID is the public id: it names the record, proves nothing.
	ID     string
	secret []byte
}

// String shows the kind and the id, never the secret.
func (p Presented) String() string { return p.Kind.String() + " credential " + p.ID }

// ErrNotCredential is returned by ParseCredential for text that is not a
// well-formed credential. It never quotes the text.
var ErrNotCredential = errors.New("not a credential of this bridge: it needs the prefix " + PrefixOperator + " or " + PrefixClient +
	" and the exact length and checksum of one the bridge generated")

// LooksLikeCredential reports whether text carries a credential prefix: a
// presented bearer value that does is read as a credential, never as the
// shared token.
func LooksLikeCredential(text string) bool {
	return strings.HasPrefix(text, PrefixOperator) || strings.HasPrefix(text, PrefixClient)
}

// ParseCredential reads a credential: its prefix, its length, its base32
// and its checksum. It returns ErrNotCredential, which says nothing of
// the text, for anything else.
func ParseCredential(text string) (Presented, error) {
	var kind Kind
	switch {
	case len(text) != CredentialLen:
		return Presented{}, ErrNotCredential
	case strings.HasPrefix(text, PrefixOperator):
		kind = KindOperator
	case strings.HasPrefix(text, PrefixClient):
		kind = KindClient
	default:
		return Presented{}, ErrNotCredential
	}
	body := text[len(kind.prefix()):]
	raw, err := b32.DecodeString(body)
	if err != nil || len(raw) != idSize+secretSize+sumSize || b32.EncodeToString(raw) != body {
		return Presented{}, ErrNotCredential
	}
	payload := raw[:idSize+secretSize]
	if binary.BigEndian.Uint32(raw[idSize+secretSize:]) != checksum(kind, payload) {
		return Presented{}, ErrNotCredential
	}
	return Presented{Kind: kind, ID: b32.EncodeToString(raw[:idSize]), secret: append([]byte(nil), raw[idSize:idSize+secretSize]...)}, nil
}

func checksum(kind Kind, payload []byte) uint32 {
	c := crc32.NewIEEE()
	io.WriteString(c, kind.prefix())
	c.Write(payload)
	return c.Sum32()
}

// Verifier is what the document keeps of a credential: its public id, a
// random salt and the salted hash of the secret. It cannot be turned back
// into the credential.
type Verifier struct {
	ID   string
	Salt []byte
	Hash []byte
}

// NewCredential draws a credential of kind from random (crypto/rand.Reader
// in production) and returns its text, which the caller shows once and
// then forgets, and its Verifier, which is what is stored.
func NewCredential(kind Kind, random io.Reader) (string, Verifier, error) {
	raw := make([]byte, idSize+secretSize+sumSize)
	salt := make([]byte, saltSize)
	if _, err := io.ReadFull(random, raw[:idSize+secretSize]); err != nil {
		return "", Verifier{}, fmt.Errorf("drawing a credential: %w", err)
	}
	if _, err := io.ReadFull(random, salt); err != nil {
		return "", Verifier{}, fmt.Errorf("drawing a credential's salt: %w", err)
	}
	binary.BigEndian.PutUint32(raw[idSize+secretSize:], checksum(kind, raw[:idSize+secretSize]))
	text := kind.prefix() + b32.EncodeToString(raw)
	p := Presented{Kind: kind, ID: b32.EncodeToString(raw[:idSize]), secret: raw[idSize : idSize+secretSize]}
	return text, Verifier{ID: p.ID, Salt: salt, Hash: p.Key(salt)}, nil
}

// Key is the presented credential's salted hash under salt: what a
// Verifier of it holds. The credential proof (package proof) is keyed by
// it, so a peer proves the credential without sending it.
func (p Presented) Key(salt []byte) []byte {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(hashLabel))
	m.Write([]byte(p.Kind.prefix()))
	m.Write([]byte(p.ID))
	m.Write(p.secret)
	return m.Sum(nil)
}

// Matches reports, in constant time, whether p is the credential v was
// made from.
func (v Verifier) Matches(p Presented) bool {
	if len(v.Hash) != hashSize {
		return false
	}
	id := subtle.ConstantTimeCompare([]byte(p.ID), []byte(v.ID))
	return subtle.ConstantTimeCompare(p.Key(v.Salt), v.Hash)&id == 1
}

// valid says why v cannot be a stored verifier, or nil.
func (v Verifier) valid() error {
	if _, err := b32.DecodeString(v.ID); err != nil || len(v.ID) != IDLen {
		return errors.New("its credential id is malformed")
	}
	if len(v.Salt) != saltSize || len(v.Hash) != hashSize {
		return fmt.Errorf("its credential hash needs a %d-byte salt and a %d-byte hash", saltSize, hashSize)
	}
	return nil
}

package natsplane

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// Commands and their replies travel sealed: AES-256-GCM under a key
// derived from the fleet's shared token, which every bridge knows and the
// cluster's credentials do not give. Only a member that knows the token
// can make a command a session's owner takes, read the answer in it, or
// make a reply the front door believes; a holder of the NATS credentials
// sees ciphertext. The token itself never leaves the process: the key is
// derived from it one way (HKDF-SHA256), per plane prefix.

// sealMagic starts every sealed message: format version 1.
var sealMagic = [4]byte{'A', 'E', 'C', 1}

const nonceSize = 12

// sealer seals and opens the plane's commands and replies.
type sealer struct{ aead cipher.AEAD }

// newSealer derives the command key of the plane prefix from token.
func newSealer(token, prefix string) (*sealer, error) {
	return newSealerFor(token, "commands v1 "+prefix)
}

// newSealerFor derives the key of what info names (a use and the plane
// prefix) from token: each use has a key of its own.
func newSealerFor(token, info string) (*sealer, error) {
	key, err := hkdf.Key(sha256.New, []byte(token), []byte("aep-mcp-bridge operator plane"), info, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts plain, bound to ad, under a fresh nonce.
func (s *sealer) seal(ad, plain []byte) []byte {
	nonce := make([]byte, nonceSize)
	rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	out := append(append([]byte(nil), sealMagic[:]...), nonce...)
	return s.aead.Seal(out, nonce, plain, ad)
}

// errSealed is every sealed message that does not open.
var errSealed = errors.New("not a sealed message of this plane")

// open decrypts b, which must be bound to ad; it also returns b's nonce,
// which a reply is bound to.
func (s *sealer) open(ad, b []byte) (plain, nonce []byte, err error) {
	if len(b) < 4+nonceSize+s.aead.Overhead() || [4]byte(b[:4]) != sealMagic {
		return nil, nil, errSealed
	}
	nonce = b[4 : 4+nonceSize]
	plain, err = s.aead.Open(nil, nonce, b[4+nonceSize:], ad)
	if err != nil {
		return nil, nil, errSealed
	}
	return plain, nonce, nil
}

// adOf joins the parts a sealed message is bound to, length-prefixed.
func adOf(parts ...string) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, byte(len(p)>>8), byte(len(p)))
		out = append(out, p...)
	}
	return out
}

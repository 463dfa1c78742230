package proof

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

// derive is a stand-in for identity.Presented.Key: the key a secret
// gives under a salt.
func derive(secret string) func(salt []byte) []byte {
	return func(salt []byte) []byte {
		m := hmac.New(sha256.New, salt)
		m.Write([]byte(secret))
		return m.Sum(nil)
	}
}

// credentials is the hub's store: id → the key the secret gives under its
// salt.
func credentials(t *testing.T) CredentialLookup {
	t.Helper()
	salt := bytes.Repeat([]byte{7}, 16)
	key := derive("alice's secret")(salt)
	return func(id string) ([]byte, []byte, bool) {
		if id != "aliceid" {
			return nil, nil, false
		}
		return salt, key, true
	}
}

// credentialExchange runs a credential proof for id with the secret the
// operator holds against a hub that looks credentials up with lookup
// (nil: it takes the token only). It returns the hub and the error of the
// step that failed.
func credentialExchange(t *testing.T, id, secret string, lookup CredentialLookup) (*Hub, error) {
	t.Helper()
	const host = "127.0.0.1:8787"
	b, challenge, err := NewCredentialBridge(id, derive(secret), host, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHub("the token", host, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if lookup != nil {
		h.AcceptCredentials(lookup)
	}
	response, err := h.Challenge(challenge)
	if err != nil {
		return h, err
	}
	finish, err := b.Verify(response)
	if err != nil {
		return h, err
	}
	return h, h.Finish(finish)
}

func TestCredentialProof(t *testing.T) {
	t.Parallel()
	h, err := credentialExchange(t, "aliceid", "alice's secret", credentials(t))
	if err != nil || h.Credential() != "aliceid" || h.Key() != "" {
		t.Fatalf("the holder of the credential: %v, credential %q; want proved as aliceid, with no session key", err, h.Credential())
	}
	tests := []struct {
		name, id, secret string
		lookup           CredentialLookup
		says             string
	}{
		{"a wrong secret", "aliceid", "guess", credentials(t), "does not know this credential"},
		{"an unknown id", "nobody", "alice's secret", credentials(t), "does not know this credential"},
		{"a hub that takes the token only", "aliceid", "alice's secret", nil, "takes the token proof only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := credentialExchange(t, tc.id, tc.secret, tc.lookup)
			if err == nil || !strings.Contains(err.Error(), tc.says) || h.Credential() != "" {
				t.Fatalf("got %v, credential %q; want a refusal saying %q", err, h.Credential(), tc.says)
			}
		})
	}
}

// TestCredentialProofIsNotATokenProof: the MACs of a credential proof
// never verify as a token proof's, even keyed alike, and a hub that asked
// for a credential's proof takes no token proof's finish.
func TestCredentialProofIsNotATokenProof(t *testing.T) {
	t.Parallel()
	const host = "h:1"
	key := derive("s")(bytes.Repeat([]byte{1}, 16))
	// A token proof whose token is the credential's key.
	b, challenge, _ := NewBridge(string(key), host, rand.Reader)
	h, _ := NewHub("other", host, rand.Reader)
	h.AcceptCredentials(func(string) ([]byte, []byte, bool) { return bytes.Repeat([]byte{1}, 16), key, true })
	var f Frame
	f, _ = decode(challenge, TypeChallenge)
	f.Credential = "id"
	response, err := h.Challenge(encode(f))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(response); !errors.Is(err, ErrMismatch) {
		t.Fatalf("a token-proof bridge verified a credential proof's response: %v", err)
	}
	// A credential finish that claims a session key is refused.
	cb, challenge, _ := NewCredentialBridge("id", derive("s"), host, rand.Reader)
	cb.Claim(&Key{}) // ignored for a credential proof
	h2, _ := NewHub("other", host, rand.Reader)
	h2.AcceptCredentials(func(string) ([]byte, []byte, bool) { return bytes.Repeat([]byte{1}, 16), key, true })
	response, _ = h2.Challenge(challenge)
	finish, err := cb.Verify(response)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(finish, []byte(`"key"`)) {
		t.Errorf("a credential proof's finish carries a session key: %s", finish)
	}
	if err := h2.Finish(finish); err != nil || h2.Credential() != "id" {
		t.Errorf("Finish: %v", err)
	}
}

// FuzzCredentialExchange plays a peer that does not hold the credential
// against both sides of a credential proof: the operator's side never
// produces its proof for a response made without the key, and the hub
// never accepts a finish; nothing panics.
func FuzzCredentialExchange(f *testing.F) {
	f.Add([]byte(`{"type":"proof-challenge","v":1,"nonce":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE","credential":"aliceid"}`),
		[]byte(`{"type":"proof-response","v":1,"nonce":"AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI","mac":"CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk","salt":"BwcHBwcHBwcHBwcHBwcHBw"}`),
		[]byte(`{"type":"proof-finish","v":1,"mac":"CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk"}`))
	f.Add([]byte(`{"type":"proof-challenge","v":1,"nonce":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE","credential":"nobody"}`), []byte(`{}`), []byte(`{"type":"proof-finish","v":1,"key":"x"}`))
	f.Fuzz(func(t *testing.T, challenge, response, finish []byte) {
		salt := bytes.Repeat([]byte{7}, 16)
		key := derive("alice's secret")(salt)
		b, _, err := NewCredentialBridge("aliceid", derive("alice's secret"), "h:1", rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := b.Verify(response); err == nil || out != nil {
			t.Fatalf("the operator's side accepted a response made without the key: %q", response)
		}
		h, _ := NewHub("the token", "h:1", rand.Reader)
		h.AcceptCredentials(func(id string) ([]byte, []byte, bool) { return salt, key, id == "aliceid" })
		if _, err := h.Challenge(challenge); err == nil {
			if err := h.Finish(finish); err == nil {
				t.Fatalf("the hub accepted a finish made without the credential: %q", finish)
			}
		}
		if h.Credential() != "" || h.Key() != "" {
			t.Fatalf("the hub holds a credential or key it was not proved")
		}
	})
}

package proof

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func newKey(t testing.TB) *Key {
	t.Helper()
	k, err := NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestFingerprint pins the fingerprint independently of fingerprint:
// 15 bytes of SHA-256 over the label and the public key, lowercase base32.
func TestFingerprint(t *testing.T) {
	k, err := NewKey(bytes.NewReader(bytes.Repeat([]byte{3}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte("aep-mcp-bridge session key v1"), k.priv.Public().(ed25519.PublicKey)...))
	want := strings.ToLower(base32.StdEncoding.EncodeToString(sum[:15]))
	if got := k.Fingerprint(); got != want || len(got) != FingerprintLen {
		t.Fatalf("got %q; want %q (%d characters)", got, want, FingerprintLen)
	}
}

func TestSessionKey(t *testing.T) {
	k := newKey(t)
	fp := k.Fingerprint()
	for _, tc := range []struct {
		name, session, want string
	}{
		{name: "certified", session: k.SessionID("01J9ZQ3V8Y6S9Q7W5X4R2T1M0N"), want: fp},
		{name: "any id of its own", session: k.SessionID("s"), want: fp},
		{name: "a plain ULID", session: "01J9ZQ3V8Y6S9Q7W5X4R2T1M0N"},
		{name: "the mark and fingerprint alone", session: ".k" + fp},
		{name: "another mark", session: "s.x" + fp},
		{name: "an upper-case fingerprint", session: "s.k" + strings.ToUpper(fp)},
		{name: "a character outside base32", session: "s.k" + fp[:23] + "1"},
		{name: "a short fingerprint", session: "s.k" + fp[1:]},
		{name: "empty", session: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SessionKey(tc.session); got != tc.want {
				t.Fatalf("SessionKey(%q) = %q; want %q", tc.session, got, tc.want)
			}
		})
	}
	if id := k.SessionID("01J9ZQ3V8Y6S9Q7W5X4R2T1M0N"); len(id) != 52 {
		t.Errorf("a certified ULID is %d characters; want 52 (session ids are at most 64)", len(id))
	}
	for source, want := range map[string]string{
		"aep://h/agent/a/session/" + k.SessionID("S"):           fp,
		"aep://h/agent/a/session/S":                             "",
		k.SessionID("bare"):                                     fp,
		"aep://h/agent/a/session/" + k.SessionID("S") + "/more": "",
	} {
		if got := SourceKey(source); got != want {
			t.Errorf("SourceKey(%q) = %q; want %q", source, got, want)
		}
	}
}

// keyExchange runs an exchange in which the bridge claims key (nil for
// none) and finish, if set, rewrites the bridge's finish frame before the
// hub reads it.
func keyExchange(t *testing.T, key *Key, finish func(f *Frame)) (*Hub, error) {
	t.Helper()
	b, challenge, err := NewBridge(token, host, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b.Claim(key)
	h, err := NewHub(token, host, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	response, err := h.Challenge(challenge)
	if err != nil {
		t.Fatal(err)
	}
	fin, err := b.Verify(response)
	if err != nil {
		t.Fatal(err)
	}
	if finish != nil {
		var f Frame
		json.Unmarshal(fin, &f)
		finish(&f)
		fin = encode(f)
	}
	return h, h.Finish(fin)
}

// TestKeyProof: a bridge that claims its key proves it with its finish,
// and a finish whose key proof does not verify is refused whole.
func TestKeyProof(t *testing.T) {
	k, other := newKey(t), newKey(t)
	// A finish of another exchange with k, for replay.
	old, err := keyExchange(t, k, nil)
	if err != nil || old.Key() != k.Fingerprint() {
		t.Fatalf("a bridge claiming its key: Key() = %q, %v; want %q", old.Key(), err, k.Fingerprint())
	}
	var replayed Frame
	keyExchange(t, k, func(f *Frame) { replayed = *f })

	if h, err := keyExchange(t, nil, nil); err != nil || h.Key() != "" {
		t.Fatalf("a bridge claiming no key: Key() = %q, %v; want none", h.Key(), err)
	}
	for _, tc := range []struct {
		name    string
		rewrite func(f *Frame)
		want    string
	}{
		{name: "another key's public half", rewrite: func(f *Frame) { f.Key = b64.EncodeToString(other.public()) }, want: "does not verify"},
		{name: "a signature of another exchange", rewrite: func(f *Frame) { f.Sig = replayed.Sig }, want: "does not verify"},
		{name: "a signature by another key", rewrite: func(f *Frame) {
			f.Sig = b64.EncodeToString(other.sign(host, make([]byte, NonceSize), make([]byte, NonceSize)))
		}, want: "does not verify"},
		{name: "a key without a signature", rewrite: func(f *Frame) { f.Sig = "" }, want: "signature is not 64 bytes"},
		{name: "a signature without a key", rewrite: func(f *Frame) { f.Key = "" }, want: "session key is not 32 bytes"},
		{name: "a malformed key", rewrite: func(f *Frame) { f.Key = "AAAA" }, want: "session key is not 32 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := keyExchange(t, k, tc.rewrite)
			if err == nil || !strings.Contains(err.Error(), tc.want) || h.Key() != "" {
				t.Fatalf("got Key() %q, %v; want the finish refused saying %q", h.Key(), err, tc.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %T; want *Error", err)
			}
		})
	}
}

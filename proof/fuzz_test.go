package proof

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
)

// FuzzExchange plays a peer that does not know the token against both
// sides: whatever it sends, the bridge never produces its proof and the
// hub never accepts a finish, and nothing panics. A genuine pair built from
// the fuzzed bytes as randomness still completes.
func FuzzExchange(f *testing.F) {
	f.Add([]byte(`{"type":"proof-challenge","v":1,"nonce":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE"}`),
		[]byte(`{"type":"proof-response","v":1,"nonce":"AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI","mac":"CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk"}`),
		[]byte(`{"type":"proof-finish","v":1,"mac":"CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk"}`))
	f.Add([]byte(`{"type":"error","code":"unauthorized"}`), []byte(`null`), []byte(`{"type":"proof-finish","v":1}`))
	f.Add([]byte(``), []byte(`{"type":"proof-response","v":1,"nonce":"","mac":""}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, challenge, response, finish []byte) {
		b, _, err := NewBridge(token, host, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := b.Verify(response); err == nil || out != nil {
			t.Fatalf("the bridge accepted a response made without the token: %q", response)
		}
		h, err := NewHub(token, host, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if reply, err := h.Challenge(challenge); err == nil {
			if _, ferr := decode(reply, TypeResponse); ferr != nil {
				t.Fatalf("the hub's response does not decode: %v", ferr)
			}
			if err := h.Finish(finish); err == nil {
				t.Fatalf("the hub accepted a finish made without the token: %q", finish)
			} else if !errors.As(err, new(*Error)) {
				t.Fatalf("Finish returned %T, not *Error", err)
			}
		}
		// Randomness drawn from the fuzzed bytes: a genuine pair completes.
		seed := append(append(append([]byte{}, challenge...), response...), bytes.Repeat([]byte{0x5a}, 2*NonceSize)...)
		gb, c, err := NewBridge(token, host, bytes.NewReader(seed))
		if err != nil {
			t.Fatal(err)
		}
		gh, err := NewHub(token, host, bytes.NewReader(seed[NonceSize:]))
		if err != nil {
			t.Fatal(err)
		}
		r, err := gh.Challenge(c)
		if bytes.Equal(seed[:NonceSize], seed[NonceSize:2*NonceSize]) {
			if err == nil {
				t.Fatal("the hub accepted a challenge repeating its own nonce")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fin, err := gb.Verify(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := gh.Finish(fin); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzSessionKey reads session ids as a hub does: nothing panics, and a
// fingerprint is returned only for an id that ends with ".k" and it.
func FuzzSessionKey(f *testing.F) {
	k, _ := NewKey(rand.Reader)
	f.Add(k.SessionID("01J9ZQ3V8Y6S9Q7W5X4R2T1M0N"))
	f.Add("01J9ZQ3V8Y6S9Q7W5X4R2T1M0N")
	f.Add(".k" + k.Fingerprint())
	f.Add("aep://h/agent/a/session/x.kaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, s string) {
		if fp := SessionKey(s); fp != "" && (len(fp) != FingerprintLen || s[:len(s)-FingerprintLen-2]+".k"+fp != s || len(s) == FingerprintLen+2) {
			t.Fatalf("SessionKey(%q) = %q", s, fp)
		}
		if fp := SourceKey(s); fp != "" && !strings.HasSuffix(s, ".k"+fp) {
			t.Fatalf("SourceKey(%q) = %q", s, fp)
		}
	})
}

// FuzzFinishKey gives a hub a finish with the token's proof and fuzzed
// key proof members: unless both are absent, the finish is refused and
// no key is proved (a signature made without the key cannot verify).
func FuzzFinishKey(f *testing.F) {
	f.Add("", "")
	f.Add("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE", "AQEB")
	f.Add("not base64", "CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk")
	f.Fuzz(func(t *testing.T, key, sig string) {
		h, err := keyExchange(t, nil, func(fr *Frame) { fr.Key, fr.Sig = key, sig })
		switch {
		case key == "" && sig == "":
			if err != nil || h.Key() != "" {
				t.Fatalf("a finish without a key proof: %v, Key() %q", err, h.Key())
			}
		case err == nil || h.Key() != "":
			t.Fatalf("a made-up key proof (%q, %q) was accepted: Key() %q", key, sig, h.Key())
		}
	})
}

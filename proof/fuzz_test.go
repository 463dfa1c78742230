package proof

import (
	"bytes"
	"crypto/rand"
	"errors"
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

package proof

import (
	"crypto/rand"
	"testing"
)

func TestStatementSignatures(t *testing.T) {
	k, err := NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sig := k.Sign("event", []byte("p"), []byte("raw"))
	if got := FingerprintOf(k.PublicKey()); got != k.Fingerprint() {
		t.Fatalf("FingerprintOf(PublicKey()) = %q; want the key's fingerprint %q", got, k.Fingerprint())
	}
	tests := []struct {
		name   string
		ok     bool
		verify func() bool
	}{
		{"as signed", true, func() bool { return Verify(k.PublicKey(), sig, "event", []byte("p"), []byte("raw")) }},
		{"another domain", false, func() bool { return Verify(k.PublicKey(), sig, "open", []byte("p"), []byte("raw")) }},
		{"parts split elsewhere", false, func() bool { return Verify(k.PublicKey(), sig, "event", []byte("pr"), []byte("aw")) }},
		{"another key", false, func() bool { return Verify(other.PublicKey(), sig, "event", []byte("p"), []byte("raw")) }},
		{"short signature", false, func() bool { return Verify(k.PublicKey(), sig[:10], "event", []byte("p"), []byte("raw")) }},
		{"short key", false, func() bool { return Verify(k.PublicKey()[:10], sig, "event", []byte("p"), []byte("raw")) }},
	}
	for _, tt := range tests {
		if got := tt.verify(); got != tt.ok {
			t.Errorf("%s: Verify = %v; want %v", tt.name, got, tt.ok)
		}
	}
	if FingerprintOf(nil) != "" {
		t.Error("FingerprintOf(nil) is not empty")
	}
}

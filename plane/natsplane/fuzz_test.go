package natsplane

import (
	"bytes"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// FuzzOpen feeds the plane's parsers what a holder of the cluster's
// credentials could put anywhere: they refuse it or open only what was
// signed or sealed, and never panic.
func FuzzOpen(f *testing.F) {
	// A fixed key: fuzz workers run this setup again, and the seeds must
	// verify in each.
	key, _ := proof.NewKey(bytes.NewReader(make([]byte, 64)))
	s, _ := newSealer(fleetToken, "aep")
	f.Add(seal(key, kindEvent, "aep", "tok", time.Unix(1, 0), []byte(`{"aep":"0.1"}`)))
	f.Add(s.seal(adOf("cmd", "aep", "fp"), []byte(`{"door":"x"}`)))
	f.Add([]byte("AEP\x01e"))
	inner := seal(key, kindEvent, "aep", "tok", time.Unix(1, 0), []byte(`{"aep":"0.1"}`))
	f.Add(seal(key, kindOpen, "aep", "fp.q", time.Unix(1, 0), openBody(7, inner)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if env, err := open(b, kindEvent, "aep", "tok"); err == nil && env.fp != key.Fingerprint() {
			t.Fatalf("opened a statement of another key: %x", b)
		}
		if env, err := open(b, kindOpen, "aep", "fp.q"); err == nil {
			if env.fp != key.Fingerprint() {
				t.Fatalf("opened a statement of another key: %x", b)
			}
			if seq, in, err := parseOpenBody(env.body); err == nil && !bytes.Equal(openBody(seq, in), env.body) {
				t.Fatalf("an open question's body does not read back: %x", env.body)
			}
		}
		if seq, in, err := parseOpenBody(b); err == nil && !bytes.Equal(openBody(seq, in), b) {
			t.Fatalf("an open question's body does not read back: %x", b)
		}
		if _, _, err := s.open(adOf("cmd", "aep", "fp"), b); err == nil && len(b) < 4+nonceSize {
			t.Fatal("opened a short sealed message")
		}
	})
}

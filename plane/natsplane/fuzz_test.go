package natsplane

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
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

// FuzzIdentities feeds the identities' readers what a token holder could
// seal (any plaintext), and what a holder of the cluster's credentials
// could put in the bucket (any bytes): a document opens only when it
// decodes whole, as the identity package reads it, and nothing panics.
func FuzzIdentities(f *testing.F) {
	s, _ := identitySealer(fleetToken, "aep")
	doc := []byte(`{"version":1,"operators":[],"clients":[]}`)
	f.Add([]byte(`{"gen":1,"at":"2026-01-01T00:00:00Z","doc":"`+base64.StdEncoding.EncodeToString(doc)+`"}`), false)
	f.Add([]byte(`{"gen":1,"doc":"bm90IGpzb24="}`), false)
	f.Add([]byte("2026-01-01T00:00:00Z"), false)
	f.Add(s.seal(adOf("identities", "aep", identitiesKey), []byte(`{}`)), true)
	f.Fuzz(func(t *testing.T, b []byte, raw bool) {
		in := b
		if !raw {
			in = s.seal(adOf("identities", "aep", identitiesKey), b)
		}
		if sd, d, err := openDocument(s, "aep", in); err == nil {
			again, err := identity.Decode(d.Encode())
			if err != nil || !bytes.Equal(again.Encode(), d.Encode()) {
				t.Fatalf("a document opened that does not read back (%v): %q", err, sd.Doc)
			}
		}
		seenIn := b
		if !raw {
			seenIn = s.seal(adOf("seen", "aep", "seen.k"), b)
		}
		openSeen(s, "aep", "seen.k", seenIn)
	})
}

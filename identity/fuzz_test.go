package identity

import (
	"bytes"
	"crypto/rand"
	"regexp"
	"strings"
	"testing"
	"time"
)

// FuzzParseCredential: any text is refused with ErrNotCredential, or
// parsed into a credential of the right shape whose String shows no
// secret; nothing panics.
func FuzzParseCredential(f *testing.F) {
	good, _, _ := NewCredential(KindOperator, rand.Reader)
	client, _, _ := NewCredential(KindClient, rand.Reader)
	for _, s := range []string{good, client, "", PrefixOperator, strings.Repeat("a", CredentialLen), good[:len(good)-1] + "a", strings.ToUpper(good)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseCredential(text)
		if err != nil {
			if err != ErrNotCredential {
				t.Fatalf("error %v; want ErrNotCredential", err)
			}
			return
		}
		if len(text) != CredentialLen || !LooksLikeCredential(text) || !strings.HasPrefix(text[len(PrefixOperator):], p.ID) {
			t.Fatalf("parsed %q into %v", text, p)
		}
		if strings.Contains(p.String(), text[len(PrefixOperator)+IDLen:]) {
			t.Fatalf("String() shows the secret")
		}
	})
}

// FuzzDecode: a document that decodes encodes to one that decodes to the
// same encoding; nothing panics, and an error never holds the input's
// verifier bytes.
func FuzzDecode(f *testing.F) {
	text, v, _ := NewCredential(KindOperator, rand.Reader)
	_ = text
	d := &Document{Operators: []Operator{{Name: "alice", Can: Answer, Groups: []string{"oncall", "sre"}, Credential: &v, Expires: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Name: "sso", Can: Read, Proxy: true}}, Clients: []Client{{Name: "ci", Credential: v}}}
	f.Add(d.Encode())
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"operators":[{"name":"a","can":"read","groups":["z","a","z"],"servers":["*"],"created":"2026-01-01T00:00:00Z","proxy":true}]}`))
	f.Add([]byte(`{"version":1,"operators":null,"clients":[]}`))
	f.Add([]byte(`{"version":1,"operators":[{"name":"a","can":"read","servers":["[a-"],"created":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(data)
		if err != nil {
			return
		}
		enc := d.Encode()
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("the encoding of a decoded document does not decode: %v\n%s", err, enc)
		}
		if !bytes.Equal(again.Encode(), enc) {
			t.Fatalf("the encoding is not stable:\n%s\n%s", enc, again.Encode())
		}
	})
}

var nameRe = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9._@+\-]{0,127}\z`)

// FuzzValidName checks ValidName against a regular expression of the
// same rule.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"alice", "a@b.c", "", " a", "a b", "ü", strings.Repeat("x", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := ValidName(name) == nil, nameRe.MatchString(name); got != want {
			t.Fatalf("ValidName(%q) accepts = %v; the rule says %v", name, got, want)
		}
	})
}

package identity

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		says string // "" when valid
	}{
		{"a login", "alice", ""},
		{"an e-mail address", "alice.b+ops@example.org", ""},
		{"digits first", "7of9", ""},
		{"the longest", strings.Repeat("a", MaxName), ""},
		{"empty", "", "empty"},
		{"too long", strings.Repeat("a", MaxName+1), "at most 128"},
		{"a space", "token holder", `' ' at byte 5`},
		{"a colon", "policy:rule", `':' at byte 6`},
		{"starts with a dot", ".hidden", "start it with a letter"},
		{"a line break", "a\nb", `'\n' at byte 1`},
		{"non-ASCII", "zoë", "0xc3 at byte 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidName(tc.in)
			switch {
			case tc.says == "" && err != nil:
				t.Fatalf("ValidName(%q) = %v; want nil", tc.in, err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Fatalf("ValidName(%q) = %v; want an error saying %q", tc.in, err, tc.says)
			}
		})
	}
}

func TestScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		patterns []string
		allows   []string
		refuses  []string
		shows    string
	}{
		{"none is every server", nil, []string{"a", "deploy-x"}, nil, "*"},
		{"a star among others is every server", []string{"x", "*"}, []string{"y"}, nil, "*"},
		{"a prefix", []string{"deploy-*"}, []string{"deploy-web", "deploy-"}, []string{"deploy", "billing", ""}, "deploy-*"},
		{"two", []string{"deploy-*", "billing"}, []string{"billing", "deploy-a"}, []string{"billing-2"}, "deploy-*,billing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseScope(tc.patterns)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.allows {
				if !s.Allows(n) {
					t.Errorf("%v refuses %q; want it allowed", tc.patterns, n)
				}
			}
			for _, n := range tc.refuses {
				if s.Allows(n) {
					t.Errorf("%v allows %q; want it refused", tc.patterns, n)
				}
			}
			if got := s.String(); got != tc.shows {
				t.Errorf("String() = %q; want %q", got, tc.shows)
			}
		})
	}
	if _, err := ParseScope([]string{"[x"}); err == nil || !strings.Contains(err.Error(), `server pattern "[x"`) {
		t.Errorf("a broken pattern: %v; want an error naming it", err)
	}
	if _, err := ParseScope(make([]string, MaxScope+1)); err == nil {
		t.Errorf("%d patterns: no error", MaxScope+1)
	}
}

func TestParseExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		says string
	}{
		{"12h", now.Add(12 * time.Hour), ""},
		{"30d", now.Add(30 * 24 * time.Hour), ""},
		{"2026-12-31", time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), ""},
		{"2026-03-02T09:00:00+01:00", time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC), ""},
		{"-1h", time.Time{}, "not in the future"},
		{"2020-01-01", time.Time{}, "not in the future"},
		{"0d", time.Time{}, "not in the future"},
		{"4000d", time.Time{}, "at most 3650 days"},
		{"99999999999999999999d", time.Time{}, "at most 3650 days"},
		{"20000h", time.Time{}, ""}, // within ten years
		{"100000h", time.Time{}, "more than ten years"},
		{"soon", time.Time{}, "give a duration"},
	}
	for _, tc := range tests {
		got, err := ParseExpiry(tc.in, now)
		switch {
		case tc.says != "":
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ParseExpiry(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.says)
			}
		case err != nil:
			t.Errorf("ParseExpiry(%q): %v", tc.in, err)
		case !tc.want.IsZero() && !got.Equal(tc.want):
			t.Errorf("ParseExpiry(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

func TestCredential(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{KindOperator, KindClient} {
		text, v, err := NewCredential(kind, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if len(text) != CredentialLen || !strings.HasPrefix(text, kind.prefix()) || !LooksLikeCredential(text) {
			t.Fatalf("%v credential %q: want %d characters starting %s", kind, text, CredentialLen, kind.prefix())
		}
		p, err := ParseCredential(text)
		if err != nil {
			t.Fatalf("ParseCredential of a fresh credential: %v", err)
		}
		if p.Kind != kind || p.ID != v.ID || !strings.HasPrefix(text, kind.prefix()+p.ID) {
			t.Errorf("parsed %v; want kind %v and id %s, the text's first %d characters after the prefix", p, kind, v.ID, IDLen)
		}
		if !v.Matches(p) {
			t.Fatalf("the verifier does not match its own credential")
		}
		if s := p.String(); strings.Contains(s, text[len(kind.prefix())+IDLen:]) {
			t.Errorf("String() = %q shows the secret", s)
		}
		// Every single-character change is refused by the checksum or
		// the verifier.
		for i := len(kind.prefix()); i < len(text); i++ {
			b := []byte(text)
			b[i] = 'a'
			if text[i] == 'a' {
				b[i] = 'b'
			}
			q, err := ParseCredential(string(b))
			if err == nil && v.Matches(q) {
				t.Fatalf("changing byte %d still matches", i)
			}
			if err == nil && q.ID == p.ID {
				t.Errorf("changing byte %d of the secret passed the checksum", i)
			}
		}
		other, _, _ := NewCredential(kind, rand.Reader)
		if q, _ := ParseCredential(other); v.Matches(q) {
			t.Errorf("another credential matches the verifier")
		}
	}
}

func TestParseCredentialRefuses(t *testing.T) {
	t.Parallel()
	good, _, _ := NewCredential(KindOperator, rand.Reader)
	for name, text := range map[string]string{
		"empty":             "",
		"the shared token":  strings.Repeat("ab", 32),
		"no prefix":         strings.Repeat("a", CredentialLen),
		"short":             good[:len(good)-1],
		"long":              good + "a",
		"upper case":        strings.ToUpper(good[:6]) + good[6:],
		"not base32":        good[:20] + "1" + good[21:],
		"another prefix":    "aepxx_" + good[6:],
		"the client prefix": PrefixClient + good[len(PrefixOperator):], // the checksum covers the prefix
	} {
		if _, err := ParseCredential(text); !errors.Is(err, ErrNotCredential) {
			t.Errorf("%s: %v; want ErrNotCredential", name, err)
		}
	}
	if strings.Contains(ErrNotCredential.Error(), good) {
		t.Errorf("the error quotes the credential")
	}
}

// newOperator is an operator record with a fresh credential.
func newOperator(t *testing.T, name string, can Right, servers ...string) (Operator, string) {
	t.Helper()
	text, v, err := NewCredential(KindOperator, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseScope(servers)
	if err != nil {
		t.Fatal(err)
	}
	return Operator{Name: name, Can: can, Servers: s, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Credential: &v}, text
}

func TestDocumentRoundTrip(t *testing.T) {
	t.Parallel()
	alice, aliceCred := newOperator(t, "alice", Answer, "deploy-*")
	alice.Expires = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	bob, _ := newOperator(t, "bob", Read)
	ctext, cv, _ := NewCredential(KindClient, rand.Reader)
	var d Document
	for _, err := range []error{
		d.AddOperator(alice), d.AddOperator(bob),
		d.AddOperator(Operator{Name: "carol@example.org", Can: Answer, Proxy: true, Created: alice.Created}),
		d.AddClient(Client{Name: "ci", Servers: alice.Servers, Created: alice.Created, Credential: cv}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	enc := d.Encode()
	for _, secret := range []string{aliceCred, aliceCred[len(PrefixOperator)+IDLen:], ctext} {
		if bytes.Contains(enc, []byte(secret)) {
			t.Fatalf("the encoded document holds a credential:\n%s", enc)
		}
	}
	back, err := Decode(enc)
	if err != nil {
		t.Fatalf("Decode(Encode()): %v\n%s", err, enc)
	}
	if diff := cmp.Diff(d.Encode(), back.Encode()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	got, _ := back.Operator("alice")
	if !got.Equal(alice) {
		t.Errorf("alice came back as %+v", got)
	}
	if d.AddOperator(bob) == nil {
		t.Errorf("adding bob twice: no error")
	}
	if !d.RemoveOperator("bob") || d.RemoveOperator("bob") {
		t.Errorf("RemoveOperator: want true then false")
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	a, _ := newOperator(t, "alice", Answer)
	good := string((&Document{Operators: []Operator{a}}).Encode())
	tests := []struct {
		name, doc, says string
	}{
		{"not JSON", "{", "the JSON ends early"},
		{"not JSON either", "{]", "invalid JSON at byte 2"},
		{"two values", `{"version":1}{}`, "more than one JSON value"},
		{"another version", `{"version":2}`, "version 2"},
		{"a typo of a member", strings.Replace(good, `"servers"`, `"server"`, 1), `unknown field "server"`},
		{"a bad name", strings.Replace(good, `"alice"`, `"al ice"`, 1), `operators[0]: the name holds ' '`},
		{"a bad right", strings.Replace(good, `"answer"`, `"admin"`, 1), `operators[0] "alice": "admin" is not a right`},
		{"a bad scope", strings.Replace(good, `"*"`, `"[x"`, 1), `server pattern "[x"`},
		{"no credential", `{"version":1,"operators":[{"name":"a","can":"read","servers":["*"],"created":"2026-01-01T00:00:00Z"}]}`, "no credential and is not a proxy"},
		{"a proxy with a credential", strings.Replace(good, `"can"`, `"proxy": true, "can"`, 1), "a proxy operator has no credential"},
		{"a short hash", `{"version":1,"operators":[{"name":"a","can":"read","servers":["*"],"created":"2026-01-01T00:00:00Z","credential":{"id":"aaaaaaaaaaaaaaaa","salt":"AAAAAAAAAAAAAAAAAAAAAA","hash":"AA"}}]}`, "a 16-byte salt and a 32-byte hash"},
		{"a duplicate", strings.Replace(good, `"operators": [`, `"operators": [`+operatorJSON(good)+",", 1), "another operator has this name"},
		{"a client with a right", `{"version":1,"clients":[{"name":"c","can":"read","servers":["*"],"created":"2026-01-01T00:00:00Z"}]}`, "can, groups and proxy are operators' members"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Decode: %v; want an error saying %q", err, tc.says)
			}
		})
	}
}

// operatorJSON cuts the first operator's object out of an encoded document.
func operatorJSON(doc string) string {
	i := strings.Index(doc, `"operators": [`) + len(`"operators": [`)
	j := strings.Index(doc[i:], "\n    }") + i + len("\n    }")
	return doc[i:j]
}

func TestDirectory(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	alice, aliceCred := newOperator(t, "alice", Answer, "deploy-*")
	old, oldCred := newOperator(t, "old", Read)
	old.Expires = now.Add(-time.Second)
	clientText, cv, _ := NewCredential(KindClient, rand.Reader)
	stranger, _, _ := NewCredential(KindOperator, rand.Reader)
	doc := &Document{Operators: []Operator{alice, old, {Name: "sso-user", Can: Read, Proxy: true}},
		Clients: []Client{{Name: "ci", Credential: cv}}}
	dir := NewDirectory(doc)

	tests := []struct {
		name string
		text string
		want string // the operator's name, or the reason refused
	}{
		{"alice's credential", aliceCred, "alice"},
		{"an expired operator's", oldCred, "expired"},
		{"a credential nobody has", stranger, "unknown"},
		{"a client's credential", clientText, "wrong-kind"},
		{"the shared token", strings.Repeat("0", 64), "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := dir.Authenticate(tc.text, now)
			var ae *AuthError
			switch {
			case err == nil:
				if o.Name != tc.want {
					t.Fatalf("authenticated %q; want %s", o.Name, tc.want)
				}
			case !errors.As(err, &ae) || ae.Reason.String() != tc.want:
				t.Fatalf("error %v; want %s", err, tc.want)
			case strings.Contains(err.Error(), tc.text):
				t.Fatalf("the error quotes the credential: %v", err)
			}
		})
	}
	if c, err := dir.AuthenticateClient(clientText, now); err != nil || c.Name != "ci" {
		t.Errorf("AuthenticateClient: %v, %v", c.Name, err)
	}
	if o, err := dir.Proxy("sso-user", now); err != nil || o.Name != "sso-user" {
		t.Errorf("Proxy(sso-user): %v, %v", o.Name, err)
	}
	for name, reason := range map[string]Reason{"alice": ReasonNotProxy, "nobody": ReasonNoRecord} {
		var ae *AuthError
		if _, err := dir.Proxy(name, now); !errors.As(err, &ae) || ae.Reason != reason {
			t.Errorf("Proxy(%s): %v; want %v", name, err, reason)
		}
	}
	p, _ := ParseCredential(aliceCred)
	if o, salt, key, err := dir.ProofKey(p.ID, now); err != nil || o.Name != "alice" || !bytes.Equal(p.Key(salt), key) {
		t.Errorf("ProofKey: %v %v; want alice's key, which her credential derives from the salt", o.Name, err)
	}
	if !dir.Current(alice, now) {
		t.Errorf("alice is not current in the directory that holds her")
	}
	renewed, _ := newOperator(t, "alice", Answer, "deploy-*")
	if dir.Current(renewed, now) {
		t.Errorf("another alice (a new credential) is current")
	}
	narrower := alice
	narrower.Servers, _ = ParseScope([]string{"deploy-web"})
	if NewDirectory(&Document{Operators: []Operator{narrower}}).Current(alice, now) {
		t.Errorf("alice with a wider scope than her record's is current")
	}
	if NewDirectory(nil).Current(alice, now) {
		t.Errorf("alice is current in an empty directory")
	}
}

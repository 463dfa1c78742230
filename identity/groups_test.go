package identity

import (
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseGroups(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxGroups+1)
	for i := range many {
		many[i] = fmt.Sprintf("g%d", i)
	}
	tests := []struct {
		name string
		in   []string
		want []string
		says string // "" when valid
	}{
		{"none", nil, nil, ""},
		{"sorted, each once", []string{"sre", "oncall", "sre", "db-admins"}, []string{"db-admins", "oncall", "sre"}, ""},
		{"the policy's alphabet", []string{"a.b_c-d9"}, []string{"a.b_c-d9"}, ""},
		{"the longest", []string{strings.Repeat("g", MaxGroup)}, []string{strings.Repeat("g", MaxGroup)}, ""},
		{"the most", many[:MaxGroups], nil, ""},
		{"empty", []string{""}, nil, `group "": the group name is empty`},
		{"too long", []string{strings.Repeat("g", MaxGroup+1)}, nil, "at most 64"},
		{"a group reference", []string{"group:sre"}, nil, `':' at byte 5`},
		{"an e-mail address", []string{"sre@example.org"}, nil, `'@' at byte 3`},
		{"starts with a dash", []string{"-x"}, nil, "start it with a letter"},
		{"non-ASCII", []string{"équipe"}, nil, "starts with the byte 0xc3"},
		{"too many", many, nil, "at most 32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseGroups(tc.in)
			switch {
			case tc.says == "" && err != nil:
				t.Fatalf("ParseGroups(%q) = %v; want nil", tc.in, err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Fatalf("ParseGroups(%q) = %v; want an error saying %q", tc.in, err, tc.says)
			case tc.says == "" && tc.want != nil:
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("ParseGroups(%q) (-want +got):\n%s", tc.in, diff)
				}
			}
		})
	}
}

// TestDirectoryGroups: the directory says which groups an operator is in
// and who is in a group, from the records; groups survive the document's
// round trip; a changed membership is a changed record.
func TestDirectoryGroups(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	alice, _ := newOperator(t, "alice", Answer)
	alice.Groups = []string{"sre", "oncall", "sre"}
	bob, _ := newOperator(t, "bob", Read)
	bob.Groups = []string{"oncall"}
	carol, _ := newOperator(t, "carol", Answer)
	var d Document
	for _, o := range []Operator{alice, bob, carol, {Name: "dave@example.org", Can: Answer, Proxy: true, Groups: []string{"sre"}}} {
		if err := d.AddOperator(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.AddOperator(Operator{Name: "eve", Can: Answer, Proxy: true, Groups: []string{"group:x"}}); err == nil {
		t.Errorf("an operator in the group %q was added", "group:x")
	}
	back, err := Decode(d.Encode())
	if err != nil {
		t.Fatal(err)
	}
	dir := NewDirectory(back)
	for name, want := range map[string][]string{"alice": {"oncall", "sre"}, "bob": {"oncall"}, "carol": nil, "dave@example.org": {"sre"}, "nobody": nil} {
		if diff := cmp.Diff(want, dir.Groups(name)); diff != "" {
			t.Errorf("Groups(%s) (-want +got):\n%s", name, diff)
		}
	}
	for group, want := range map[string][]string{"oncall": {"alice", "bob"}, "sre": {"alice", "dave@example.org"}, "dba": nil} {
		if diff := cmp.Diff(want, dir.Members(group)); diff != "" {
			t.Errorf("Members(%s) (-want +got):\n%s", group, diff)
		}
	}
	got := dir.Groups("alice")
	got[0] = "changed"
	if dir.Groups("alice")[0] != "oncall" {
		t.Errorf("changing the slice Groups returned changed the directory")
	}
	a, _ := back.Operator("alice")
	if !dir.Current(a, now) {
		t.Fatal("alice is not current")
	}
	moved := a
	moved.Groups = []string{"oncall"}
	if dir.Current(moved, now) {
		t.Errorf("alice with other groups than her record's is current")
	}
}

func TestDecodeGroups(t *testing.T) {
	t.Parallel()
	a, _ := newOperator(t, "alice", Answer)
	good := string((&Document{Operators: []Operator{a}}).Encode())
	if strings.Contains(good, `"groups"`) {
		t.Errorf("a document without groups writes the member, which bridges before groups refuse:\n%s", good)
	}
	withGroups := strings.Replace(good, `"servers"`, `"groups": ["sre", "oncall", "sre"], "servers"`, 1)
	d, err := Decode([]byte(withGroups))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"oncall", "sre"}, d.Operators[0].Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	tests := []struct{ name, doc, says string }{
		{"a bad group", strings.Replace(good, `"servers"`, `"groups": ["on call"], "servers"`, 1), `operators[0] "alice": group "on call": the group name holds ' '`},
		{"not a list", strings.Replace(good, `"servers"`, `"groups": "sre", "servers"`, 1), "groups holds a string where a []string belongs"},
		{"a client's groups", `{"version":1,"clients":[{"name":"c","groups":["sre"],"servers":["*"],"created":"2026-01-01T00:00:00Z"}]}`, "can, groups and proxy are operators' members"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			var de *DecodeError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Decode: %v; want an error saying %q", err, tc.says)
			}
		})
	}
}

var groupRe = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9._\-]{0,63}\z`)

// FuzzParseGroups checks ValidGroup against a regular expression of the
// same rule, and that ParseGroups returns what it accepts sorted and once.
func FuzzParseGroups(f *testing.F) {
	for _, s := range []string{"sre", "a.b_c-d", "", "group:x", "ü", strings.Repeat("x", 65), "b\x00a"} {
		f.Add(s, "oncall")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := ValidGroup(a) == nil, groupRe.MatchString(a); got != want {
			t.Fatalf("ValidGroup(%q) accepts = %v; the rule says %v", a, got, want)
		}
		out, err := ParseGroups([]string{a, b, a})
		if err != nil {
			if ValidGroup(a) == nil && ValidGroup(b) == nil {
				t.Fatalf("ParseGroups refused valid groups %q, %q: %v", a, b, err)
			}
			return
		}
		if !slices.IsSorted(out) || len(slices.Compact(slices.Clone(out))) != len(out) || !slices.Contains(out, a) || !slices.Contains(out, b) {
			t.Fatalf("ParseGroups(%q, %q, %q) = %q; want both, sorted, once", a, b, a, out)
		}
	})
}

// TestCurrentClient: a client's record is current while the directory
// holds it unchanged and unexpired; a new credential, a narrower scope, a
// revocation or its expiry make it stale.
func TestCurrentClient(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	_, v, _ := NewCredential(KindClient, rand.Reader)
	_, other, _ := NewCredential(KindClient, rand.Reader)
	scope, _ := ParseScope([]string{"deploy-*"})
	ci := Client{Name: "ci", Servers: scope, Credential: v, Expires: now.Add(time.Hour)}
	dir := NewDirectory(&Document{Clients: []Client{ci}})
	if !dir.Clients() || NewDirectory(nil).Clients() {
		t.Error("Clients() does not say whether the directory holds clients")
	}
	renewed, widened := ci, ci
	renewed.Credential = other
	widened.Servers = Scope{}
	tests := []struct {
		name string
		c    Client
		at   time.Time
		want bool
	}{
		{"as recorded", ci, now, true},
		{"with another credential", renewed, now, false},
		{"with another scope", widened, now, false},
		{"at its expiry", ci, now.Add(time.Hour), false},
	}
	for _, tc := range tests {
		if got := dir.CurrentClient(tc.c, tc.at); got != tc.want {
			t.Errorf("%s: CurrentClient = %v; want %v", tc.name, got, tc.want)
		}
	}
	if NewDirectory(nil).CurrentClient(ci, now) {
		t.Error("a revoked client is current")
	}
}

package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func sha(prefix, s string) string {
	sum := sha256.Sum256([]byte(s))
	return prefix + hex.EncodeToString(sum[:])
}

func TestCanonicalArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want string
	}{
		{"absent", ``, `{}`},
		{"white space only", " \n\t", `{}`},
		{"empty", `{ }`, `{}`},
		{"keys sorted", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"nested keys sorted", `{"z":{"y":[{"b":true,"a":null}],"x":false}}`, `{"z":{"x":false,"y":[{"a":null,"b":true}]}}`},
		{"white space dropped", "{ \"a\" :\n [ 1 , 2 ] ,\t\"b\" : \"x y\" }", `{"a":[1,2],"b":"x y"}`},
		{"keys by code point", `{"é":1,"z":2,"Z":3,"😀":4,"ｚ":5}`, `{"Z":3,"z":2,"é":1,"ｚ":5,"😀":4}`},
		{"numbers kept as written", `{"a":1.0,"b":1e3,"c":-0,"d":1E+3,"e":12345678901234567890123}`, `{"a":1.0,"b":1e3,"c":-0,"d":1E+3,"e":12345678901234567890123}`},
		{"escapes decoded", `{"s":"\u0041\/\u00e9\ud83d\ude00"}`, `{"s":"A/é😀"}`},
		{"controls escaped", `{"s":"\b\f\n\r\t\u0001\u001f"}`, `{"s":"\b\f\n\r\t\u0001\u001f"}`},
		{"quote and backslash", `{"s":"\"\\"}`, `{"s":"\"\\"}`},
		{"no HTML escaping", `{"s":"<a&b>\u2028"}`, "{\"s\":\"<a&b>\u2028\"}"},
		{"escaped key", `{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{"empty containers", `{"a":[],"b":{}}`, `{"a":[],"b":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := CanonicalArgs([]byte(tt.args))
			if err != nil {
				t.Fatalf("CanonicalArgs(%s): %v", tt.args, err)
			}
			if string(got) != tt.want {
				t.Errorf("CanonicalArgs(%s) = %s; want %s", tt.args, got, tt.want)
			}
			if d, want := ArgsDigest([]byte(tt.args)), sha("sha256:", tt.want); d != want {
				t.Errorf("ArgsDigest(%s) = %s; want %s, the SHA-256 of %s", tt.args, d, want, tt.want)
			}
		})
	}
}

func TestArgsDigestSameAndDifferent(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{`{"env":"prod","replicas":3}`, `{"replicas":3,"env":"prod"}`, "{\n  \"replicas\": 3,\n  \"env\": \"prod\"\n}\n", `{"env":"\u0070rod","replicas":3}`},
		{``, `{}`, ` { } `},
		{`{"a":{"b":1,"c":2}}`, `{"a":{"c":2,"b":1}}`},
	}
	for _, group := range same {
		want := ArgsDigest([]byte(group[0]))
		for _, a := range group[1:] {
			if got := ArgsDigest([]byte(a)); got != want {
				t.Errorf("ArgsDigest(%q) = %s; want %s, the digest of %q", a, got, want, group[0])
			}
		}
	}
	different := []string{
		`{"n":1}`, `{"n":1.0}`, `{"n":1e0}`, `{"n":"1"}`, `{"n":[1]}`, `{"n":true}`, `{"n":null}`, `{"N":1}`,
		`{"a":[1,2]}`, `{"a":[2,1]}`,
		// Unreadable ones digest by their bytes, apart from every readable one.
		`{"n":1,"n":1}`, `[1]`, `null`, `{"n":1`, `{"n":1}]`, "{\"s\":\"\xff\"}",
	}
	seen := map[string]string{}
	for _, a := range different {
		d := ArgsDigest([]byte(a))
		if prev, dup := seen[d]; dup {
			t.Errorf("ArgsDigest(%q) = ArgsDigest(%q) = %s; want different digests", a, prev, d)
		}
		seen[d] = a
	}
}

func TestArgsDigestUnreadable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args  string
		fault string
	}{
		{`[1,2]`, "the arguments are not a JSON object"},
		{`null`, "the arguments are not a JSON object"},
		{`"x"`, "the arguments are not a JSON object"},
		{`{"a":1}x`, "the arguments have bytes after the JSON value"},
		{`{"a":1}{}`, "the arguments have bytes after the JSON value"},
		{`{"a":1,"a":2}`, `the arguments repeat the key at $."a"; JSON readers disagree on which value wins`},
		{`{"x":[{"b":1},{"b":1,"b":2}]}`, `the arguments repeat the key at $."x"[1]."b"; JSON readers disagree on which value wins`},
		{`{"a":01}`, "the arguments are not JSON: expected ',' or '}' at byte 6"},
		{`{"a":1.}`, "the arguments are not JSON: bad number at byte 7"},
		{`{"a":-}`, "the arguments are not JSON: bad number at byte 6"},
		{`{"a":tru}`, "the arguments are not JSON: unexpected character at byte 5"},
		{`{"a":"x`, "the arguments are not JSON: unterminated string at byte 7"},
		{"{\"a\":\"\t\"}", "the arguments are not JSON: control character in a string at byte 6"},
		{`{"a":"\x"}`, "the arguments are not JSON: bad escape at byte 8"},
		{`{"a":"\u12"}`, "the arguments are not JSON: bad \\u escape at byte 8"},
		{`{"a":"\udc00"}`, "the arguments hold invalid UTF-8"},
		{`{"a":"\ud800x"}`, "the arguments hold invalid UTF-8"},
		{`{"a":"\ud800\u0041"}`, "the arguments hold invalid UTF-8"},
		{"{\"a\":\"\xc3\"}", "the arguments hold invalid UTF-8"},
		{"{\"\xff\":1}", "the arguments hold invalid UTF-8"},
		{`{a:1}`, "the arguments are not JSON: expected a member name at byte 1"},
		{`{"a":1,}`, "the arguments are not JSON: expected a member name at byte 7"},
		{`{"a":[1,]}`, "the arguments are not JSON: unexpected character at byte 8"},
		{`{"a":1e999}`, "the arguments hold a number beyond what a double can hold (±1.8e308)"},
		{`{"a":-1e-999}`, "the arguments hold a non-zero number too small for a double (it would read as 0)"},
		{`{"a":` + strings.Repeat("[", MaxArgsDepth) + strings.Repeat("]", MaxArgsDepth) + `}`, "the arguments nest deeper than 128 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			_, err := CanonicalArgs([]byte(tt.args))
			if err == nil || err.Error() != tt.fault {
				t.Errorf("CanonicalArgs(%q) error = %v; want %q", tt.args, err, tt.fault)
			}
			if got, want := ArgsDigest([]byte(tt.args)), sha("sha256-raw:", tt.args); got != want {
				t.Errorf("ArgsDigest(%q) = %s; want %s, the raw digest", tt.args, got, want)
			}
		})
	}
	// One level less than the bound reads.
	ok := `{"a":` + strings.Repeat("[", MaxArgsDepth-1) + strings.Repeat("]", MaxArgsDepth-1) + `}`
	if _, err := CanonicalArgs([]byte(ok)); err != nil {
		t.Errorf("arguments nested %d deep: %v; want them read", MaxArgsDepth, err)
	}
	// Zero written any way is zero, not an underflow.
	for _, z := range []string{`{"a":0e-999}`, `{"a":-0.000e5}`, `{"a":0.0}`} {
		if _, err := CanonicalArgs([]byte(z)); err != nil {
			t.Errorf("CanonicalArgs(%s): %v; want zero read", z, err)
		}
	}
}

func TestIsCanonical(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args string
		want bool
	}{
		{`{}`, true},
		{`{"message":"ping"}`, true},
		{`{"a":[1,{"b":null,"c":"é"}],"b":-0,"c":true,"d":false,"e":[]}`, true},
		{`{"n":123456789012345678}`, true},
		{`{"n":1234567890123456789}`, false}, // 19 digits: the reader decides
		{`{"n":1.5}`, false},
		{`{"n":1e3}`, false},
		{`{"n":01}`, false},
		{`{"b":1,"a":2}`, false},    // out of order
		{`{"a":1,"a":2}`, false},    // repeated
		{`{"a": 1}`, false},         // whitespace
		{`{"a":1} `, false},         // trailing whitespace
		{`{"a":"\n"}`, false},       // an escape
		{"{\"a\":\"\xff\"}", false}, // invalid UTF-8
		{"{\"a\":\"\x01\"}", false}, // a control character
		{`[1]`, false},
		{``, false},
		{`{"a":tru}`, false},
		{`{"a":1`, false},
		{`{"a":[1,]}`, false},
		{strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), false}, // deeper than canonDepth
	} {
		if got := isCanonical([]byte(tt.args)); got != tt.want {
			t.Errorf("isCanonical(%q) = %v; want %v", tt.args, got, tt.want)
		}
		if tt.want {
			canon, err := CanonicalArgs([]byte(tt.args))
			if err != nil || string(canon) != tt.args {
				t.Errorf("CanonicalArgs(%q) = %q, %v; want the arguments themselves", tt.args, canon, err)
			}
		}
	}
}

package glob

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"*", []string{"", "a", "a/b", "é"}, nil},
		{"deploy", []string{"deploy"}, []string{"Deploy", "deploy2", "redeploy", ""}},
		{"deploy-*", []string{"deploy-", "deploy-eu", "deploy-eu/west"}, []string{"deploy", "xdeploy-eu"}},
		{"*_table", []string{"_table", "drop_table"}, []string{"drop_tables"}},
		{"*prod*", []string{"prod", "my-prod-db"}, []string{"pro"}},
		{"a?c", []string{"abc", "aéc"}, []string{"ac", "abbc"}},
		{"a*b*c", []string{"abc", "aXbYc", "abbbc", "abcbc"}, []string{"ab", "acb", "abcx"}},
		{"*a*a*a*b", []string{"aaab", "xaxaxab"}, []string{strings.Repeat("a", 200)}},
		{"[abc]x", []string{"ax", "cx"}, []string{"dx", "x"}},
		{"[a-c]", []string{"a", "b", "c"}, []string{"d", "A"}},
		{"[!a-c]", []string{"d", "é"}, []string{"a", ""}},
		{"[^a-c]", []string{"d"}, []string{"b"}},
		{"[]a]", nil, nil}, // checked as an error below
		{`\*`, []string{"*"}, []string{"a"}},
		{`a\?`, []string{"a?"}, []string{"ab"}},
		{`[\]]`, []string{"]"}, []string{"a"}},
		{`[a\-z]`, []string{"a", "-", "z"}, []string{"b"}},
		{"[a-]", []string{"a", "-"}, []string{"b"}},
		{"é*", []string{"é", "été"}, []string{"e"}},
		{"?", []string{"é", "a"}, []string{"", "ab"}},
		{"**", []string{"", "abc"}, nil},
	}
	for _, tt := range tests {
		if tt.pattern == "[]a]" {
			if _, err := Compile(tt.pattern); err == nil {
				t.Errorf("Compile(%q): no error; want an empty [] refused", tt.pattern)
			}
			continue
		}
		g, err := Compile(tt.pattern)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.pattern, err)
			continue
		}
		for _, n := range tt.match {
			if !g.Match(n) {
				t.Errorf("%q does not match %q; want a match", tt.pattern, n)
			}
		}
		for _, n := range tt.miss {
			if g.Match(n) {
				t.Errorf("%q matches %q; want no match", tt.pattern, n)
			}
		}
	}
}

// globRegexp is an independent reading of the glob syntax, as a regular
// expression, for differential tests. ok is false when the pattern is not
// a valid glob.
func globRegexp(pattern string) (*regexp.Regexp, bool) {
	if pattern == "" || !utf8.ValidString(pattern) {
		return nil, false
	}
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 == len(rs) {
				return nil, false
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case ']':
			return nil, false
		case '[':
			i++
			neg := i < len(rs) && (rs[i] == '!' || rs[i] == '^')
			if neg {
				i++
			}
			var class strings.Builder
			n := 0
			for ; i < len(rs) && rs[i] != ']'; i++ {
				lo := rs[i]
				if lo == '\\' {
					if i+1 == len(rs) {
						return nil, false
					}
					i++
					lo = rs[i]
				}
				hi := lo
				if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
					i += 2
					hi = rs[i]
					if hi == '\\' {
						if i+1 == len(rs) {
							return nil, false
						}
						i++
						hi = rs[i]
					}
					if hi < lo {
						return nil, false
					}
				}
				class.WriteString(classChar(lo))
				if hi != lo {
					class.WriteString("-" + classChar(hi))
				}
				n++
			}
			if i >= len(rs) || n == 0 {
				return nil, false
			}
			if neg {
				b.WriteString("[^" + class.String() + "]")
			} else {
				b.WriteString("[" + class.String() + "]")
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

// classChar writes one character for a regexp character class: QuoteMeta
// escapes all but '-'.
func classChar(r rune) string {
	if r == '-' {
		return `\-`
	}
	return regexp.QuoteMeta(string(r))
}

func TestGlobAgainstRegexp(t *testing.T) {
	t.Parallel()
	patterns := []string{"*", "a*", "*a", "*a*", "a?b*c", "[a-c]*[!x]", `\[*\]`, "*[0-9]?", "é?*ü", "a**b", "*.*.*"}
	names := []string{"", "a", "ab", "abc", "a.b.c", "[x]", "a1z", "éxü", "éü", "xab", "aXXb", "a-b", "b"}
	for _, p := range patterns {
		g, err := Compile(p)
		re, ok := globRegexp(p)
		if err != nil || !ok {
			t.Fatalf("pattern %q: Compile error %v, regexp ok %v", p, err, ok)
		}
		for _, n := range names {
			if got, want := g.Match(n), re.MatchString(n); got != want {
				t.Errorf("%q on %q: match = %v; the regexp reading says %v", p, n, got, want)
			}
		}
	}
}

// FuzzGlob checks the glob matcher against the regular-expression reading
// of the same syntax.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"a*b?c", "axxbyc"}, {"[!a-c]*", "d"}, {`\*[x-z]`, "*y"}, {"*é*", "café"}, {"[", ""}, {"*[x-x-0]", "0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := Compile(pattern)
		re, ok := globRegexp(pattern)
		if len(pattern) > MaxLen {
			ok = false
		}
		if (err == nil) != ok {
			t.Fatalf("pattern %q: Compile error %v, the regexp reading ok = %v", pattern, err, ok)
		}
		if err != nil || !utf8Valid(name) {
			return
		}
		if got, want := g.Match(name), re.MatchString(name); got != want {
			t.Fatalf("%q on %q: match = %v; the regexp reading says %v", pattern, name, got, want)
		}
	})
}

// utf8Valid: on invalid UTF-8 the regexp package and the matcher read
// bytes differently; names are checked as valid text.
func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

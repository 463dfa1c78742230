package textdiff

import (
	"strconv"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	tests := []struct{ name, a, b, want string }{
		{"equal", "x\n", "x\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"added at the end without a line feed", "a\n", "a\nb", "--- a\n+++ b\n@@ -1,1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n"},
		{"from nothing", "", "a\n", "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+a\n"},
		{"two hunks far apart",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified("a", "b", tc.a, tc.b); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// apply applies a unified diff to a, as patch does, checking every
// context and removed line against a.
func apply(t *testing.T, a, diff string) string {
	t.Helper()
	if diff == "" {
		return a
	}
	lines := strings.SplitAfter(diff, "\n")
	al := strings.SplitAfter(a, "\n")
	if al[len(al)-1] == "" {
		al = al[:len(al)-1]
	}
	var out strings.Builder
	at := 0
	for i := 2; i < len(lines) && lines[i] != ""; {
		h := lines[i]
		aStart, err := oldStart(h)
		if err != nil {
			t.Fatalf("hunk header %q: %v", h, err)
		}
		if aStart > 0 {
			aStart-- // 1-based, except an empty range (0)
		}
		for ; at < aStart; at++ {
			out.WriteString(al[at])
		}
		for i++; i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@"); i++ {
			l := lines[i]
			text := l[1:]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`) {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if at >= len(al) || al[at] != text {
					t.Fatalf("line %d is %q in a; the diff says %q", at+1, al[min(at, len(al)-1)], text)
				}
				if l[0] == ' ' {
					out.WriteString(text)
				}
				at++
			case '+':
				out.WriteString(text)
			}
		}
	}
	for ; at < len(al); at++ {
		out.WriteString(al[at])
	}
	return out.String()
}

// oldStart reads the old range's start from "@@ -S,L +S,L @@".
func oldStart(h string) (int, error) {
	f := strings.Fields(h)
	s, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
	return strconv.Atoi(s)
}

// FuzzUnified: applying the diff of a and b to a gives b.
func FuzzUnified(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd")
	f.Add("", "x")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n2\n3\n4\n5\n6\n7\n8\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 4096 || len(b) > 4096 {
			return
		}
		if got := apply(t, a, Unified("a", "b", a, b)); got != b {
			t.Fatalf("applying the diff gave %q; want %q\n%s", got, b, Unified("a", "b", a, b))
		}
	})
}

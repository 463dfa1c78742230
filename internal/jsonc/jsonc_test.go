package jsonc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plain decodes a tree into the values encoding/json gives, reading
// scalars from their source text.
func plain(t *testing.T, src []byte, n *Node) any {
	t.Helper()
	switch n.Kind {
	case '{':
		m := map[string]any{}
		for _, x := range n.Members {
			m[x.Key] = plain(t, src, x.Val)
		}
		return m
	case '[':
		a := []any{}
		for _, x := range n.Elems {
			a = append(a, plain(t, src, x))
		}
		return a
	case '"':
		return n.Str
	}
	var v any
	if err := json.Unmarshal(src[n.Start:n.End], &v); err != nil {
		t.Fatalf("scalar %q: %v", src[n.Start:n.End], err)
	}
	return v
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, src string
		want      any
	}{
		{"plain JSON", `{"a": [1, "x", true, null]}`, map[string]any{"a": []any{1.0, "x", true, nil}}},
		{"line and block comments", "// top\n{/* a */\"a\": 1 // one\n}", map[string]any{"a": 1.0}},
		{"trailing commas", `{"a": [1, 2,], "b": {"c": 3,},}`, map[string]any{"a": []any{1.0, 2.0}, "b": map[string]any{"c": 3.0}}},
		{"escapes in keys and strings", `{"\u00e9": "a\"b"}`, map[string]any{"é": `a"b`}},
		{"CRLF line endings", "{\r\n  \"a\": 1\r\n}\r\n", map[string]any{"a": 1.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, plain(t, []byte(tc.src), n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSpans checks that each span covers its value's text exactly, so an
// editor can splice there.
func TestSpans(t *testing.T) {
	src := `{ "servers" : { "a": {"command": "npx", "args": ["-y", "x"]} } }`
	root, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a := root.Member("servers").Val.Member("a")
	if got := src[a.KeyStart:a.KeyEnd]; got != `"a"` {
		t.Errorf("key span %q", got)
	}
	if got := src[a.Val.Start:a.Val.End]; got != `{"command": "npx", "args": ["-y", "x"]}` {
		t.Errorf("value span %q", got)
	}
	args := a.Val.Member("args").Val
	if got := src[args.Elems[1].Start:args.Elems[1].End]; got != `"x"` {
		t.Errorf("element span %q", got)
	}
	if i := a.Val.MemberIndex("args"); i != 1 {
		t.Errorf("MemberIndex(args) = %d; want 1", i)
	}
	if a.Val.Member("env") != nil || a.Val.MemberIndex("env") != -1 || args.Member("x") != nil {
		t.Error("a missing member was found")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"empty", ``, "line 1, column 1: unexpected end of the document"},
		{"unterminated comment", "{\n/* x", "line 2, column 1: unterminated /* comment"},
		{"missing colon", `{"a" 1}`, `expected ":" after the member name "a"`},
		{"missing comma", "{\"a\": 1\n \"b\": 2}", `line 2, column 2: expected "," or "}" after the member "a"`},
		{"bad scalar", `{"a": tru}`, `"tru" is not a JSON value`},
		{"control character in a string", "{\"a\": \"x\ty\"}", "a control character inside a string"},
		{"unterminated string", `{"a": "x}`, "unterminated string"},
		{"invalid UTF-8", "{\"a\": \"\xff\"}", "a string that is not valid JSON"},
		{"text after the document", `{} x`, `unexpected 'x' after the document`},
		{"too deep", strings.Repeat("[", MaxDepth+1), "nested deeper than 512 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// FuzzParse: any input parses or is refused without a panic; a document
// encoding/json accepts parses to the same value, with spans inside it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",{}]}`, "// c\n{\"a\": 1,}", `[1e5, -0.5, "\u00e9"]`, `{"a":{"b":[[]]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Parse(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("an error without its place: %v", err)
			}
			return
		}
		var check func(n *Node)
		check = func(n *Node) {
			if n.Start < 0 || n.End > len(b) || n.Start >= n.End {
				t.Fatalf("span [%d, %d) outside the %d-byte input", n.Start, n.End, len(b))
			}
			for _, m := range n.Members {
				check(m.Val)
			}
			for _, e := range n.Elems {
				check(e)
			}
		}
		check(n)
		var want any
		if json.Unmarshal(b, &want) == nil {
			if diff := cmp.Diff(want, plain(t, b, n)); diff != "" {
				t.Fatalf("differs from encoding/json (-want +got):\n%s", diff)
			}
		}
	})
}

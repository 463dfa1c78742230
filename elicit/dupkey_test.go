package elicit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// ambiguousKeyByTokens is the reference ambiguousKey is checked against:
// the same question answered by encoding/json's tokenizer, which unquotes
// every key, comparing each key with every one before it in its object.
func ambiguousKeyByTokens(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func() (string, bool)
	walk = func() (string, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return "", true
		}
		switch d {
		case '{':
			var seen []string
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false
				}
				k, _ := kt.(string)
				for _, s := range seen {
					if strings.EqualFold(s, k) {
						return k, true
					}
				}
				seen = append(seen, k)
				if k, ok := walk(); k != "" || !ok {
					return k, ok
				}
			}
			dec.Token() // }
		case '[':
			for dec.More() {
				if k, ok := walk(); k != "" || !ok {
					return k, ok
				}
			}
			dec.Token() // ]
		}
		return "", true
	}
	k, _ := walk()
	return k
}

func TestAmbiguousKey(t *testing.T) {
	t.Parallel()
	// The premise of the long-s row below: encoding/json takes the key
	// argumentſ for the member arguments.
	var premise toolParams
	if err := json.Unmarshal([]byte(`{"name":"echo","arguments":{"a":1},"argumentſ":{"b":2}}`), &premise); err != nil || string(premise.Arguments) != `{"b":2}` {
		t.Fatalf("encoding/json read arguments %s (%v); the row's premise is that it reads {\"b\":2}", premise.Arguments, err)
	}
	many := func(dup string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 40 {
			b.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
		}
		b.WriteString(`"` + dup + `":2}`)
		return b.String()
	}
	for _, tc := range []struct{ in, want string }{
		{`{"name":"echo","arguments":{"a":1}}`, ""},
		{`{"name":"echo","Name":"deploy"}`, "Name"},
		{`{"name":"echo","arguments":{"a":1,"a":2}}`, "a"},
		{`{"name":"echo","arguments":{"x":{"a":1},"y":{"a":2}}}`, ""},
		{`{"name":"echo","arguments":[{"a":1},{"a":2,"A":3}]}`, "A"},
		{`{"name":"e","arguments":{"s":"\"a\":1,\"a\":2","t":"{"}}`, ""},
		{`{"n\u0061me":"e","name":"f"}`, "name"},
		{`{"\u00c9t\u00e9":1,"été":2}`, "été"},
		{`{"ÉTÉ":1,"été":2}`, "été"},
		{`{"a\\":1,"a\\\\":2,"A\\":3}`, `A\`},
		{many("new"), ""},
		{many("KXXX"), "KXXX"},
		{`[1,"a",{"b":[{"c":1}],"B":0}]`, "B"},
		// encoding/json reads argumentſ (long s) as arguments: the
		// policy would see {"b":2} and the server {"a":1}.
		{`{"name":"echo","arguments":{"a":1},"argumentſ":{"b":2}}`, "argumentſ"},
		{`{"name":"echo","\u212Aey":1,"key":2}`, "key"},
	} {
		if got := ambiguousKey([]byte(tc.in)); got != tc.want {
			t.Errorf("ambiguousKey(%s) = %q; want %q", tc.in, got, tc.want)
		}
		if got := ambiguousKeyByTokens([]byte(tc.in)); got != tc.want {
			t.Errorf("the reference says %q for %s; the table wants %q", got, tc.in, tc.want)
		}
	}
}

// FuzzAmbiguousKey checks the one-pass scan against encoding/json's
// tokenizer on every valid JSON document the policy could be given (no
// deeper than a message the proxy parses).
func FuzzAmbiguousKey(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","Name":"deploy"}`,
		`{"a":{"b":1,"B":[{"c":"\"c\""}]},"\u0041":2}`,
		`[{"k":1},{"k":2},{"K":3,"k":4}]`,
		`{"":1,"":2}`,
		`"x"`,
		`{"ſ":1,"s":2,"S":3}`,
		`{"K":1,"k":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		if env, err := jsonrpc.Scan(raw, jsonrpc.ScanOptions{}); err == nil && env.MaxDepth > maxParseDepth {
			return
		}
		if got, want := ambiguousKey(raw), ambiguousKeyByTokens(raw); got != want {
			t.Fatalf("ambiguousKey(%q) = %q; encoding/json's tokens say %q", raw, got, want)
		}
	})
}

func BenchmarkAmbiguousKey(b *testing.B) {
	raw := []byte(`{"name":"echo","arguments":{"environment":"production","replicas":3,"image":"registry.example/app:1.2.3","path":"/srv/app/config.yaml"},"_meta":{"progressToken":7}}`)
	b.ReportAllocs()
	for b.Loop() {
		if ambiguousKey(raw) != "" {
			b.Fatal("a duplicate where there is none")
		}
	}
}

package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds any bytes to Parse: it never panics, refuses with a
// *ParseError that says something, or gives a policy that decides any
// call, the same way twice.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"example.yaml", "example.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"rules: []", "rules:\n  - action: allow\n", `{"rules":[{"action":"deny","reason":"r","tool":"a\/b"}]}`,
		"rules:\n  - when: 'args.x > 1'\n    action: ask\n    approvers: [a, b]\n    approvals: 2\n",
		"groups:\n  g: {members: [a], identity: true}\nrules:\n  - action: ask\n    approvers: group:g\n",
		"x: &a [1]\ny: *a\n", "rules: [\n", "---\n---\n", "{rules: [{tool: '[a-', action: allow}]}",
	} {
		f.Add([]byte(s))
	}
	calls := []Call{
		{Server: "deploy-eu", Tool: "deploy", Client: "ci-1", Arguments: []byte(`{"environment":"production","replicas":11,"x":2}`)},
		{Server: "db", Tool: "drop_table"},
		{Server: "", Tool: "", Arguments: []byte(`{"a":`)},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("Parse error %v (%T); want a *ParseError with problems", err, err)
			}
			for _, pr := range pe.Problems {
				if pr.Msg == "" {
					t.Fatalf("a problem with no message: %+v", pr)
				}
			}
			if p != nil {
				t.Fatal("Parse returned a policy with its error")
			}
			return
		}
		again, err := Parse(data)
		if err != nil || again.Revision() != p.Revision() || !reflect.DeepEqual(again.RuleIDs(), p.RuleIDs()) {
			t.Fatalf("Parse is not deterministic: %v", err)
		}
		for _, c := range calls {
			d := p.Decide(c)
			if d.Action < Allow || d.Action > Ask || (d.Action == Ask) != (d.Ask != nil) || d.Revision != p.Revision() {
				t.Fatalf("Decide(%+v) = %+v: not a whole decision", c, d)
			}
			if d.Action == Ask && (d.Ask.Approvals < 1 || d.Ask.Timeout <= 0) {
				t.Fatalf("Decide(%+v): ask with %d approvals and timeout %s", c, d.Ask.Approvals, d.Ask.Timeout)
			}
			if d2 := p.Decide(c); !reflect.DeepEqual(d, d2) {
				t.Fatalf("Decide is not deterministic: %+v then %+v", d, d2)
			}
		}
	})
}

// FuzzDecide runs any condition on any arguments: compiling refuses or
// gives a condition; evaluating never panics, stays within its cost, and
// a fault only ever makes a decision more cautious.
func FuzzDecide(f *testing.F) {
	for _, s := range [][2]string{
		{`args.environment == "production" && args.replicas > 10`, `{"environment":"production","replicas":11}`},
		{`args.replicas > 10`, `{}`},
		{`args.s.matches("^a+$")`, `{"s":"aaa"}`},
		{`args.l.all(x, x > 0)`, `{"l":[1,2,-1]}`},
		{`size(args) > 2 || args.o.k == null`, `{"o":{"k":null}}`},
		{`args.s.split("").map(c, args.s.split("").exists(d, d == c + "!")).exists(b, b)`, `{"s":"abcdefghij"}`},
		{`int(args.s) > 3`, `{"s":"12x"}`},
		{`args.n / 0 == 1`, `{"n":1}`},
		{`tool.startsWith("d") && client == ""`, `{"a":1,"a":2}`},
		{`"x" in args`, `[1]`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, when string, args []byte) {
		src, _ := json.Marshal(when)
		doc := `{"rules":[` +
			`{"id":"d","tool":"deny-*","when":` + string(src) + `,"action":"deny","reason":"r"},` +
			`{"id":"a","tool":"ask-*","when":` + string(src) + `,"action":"ask","approvers":["x"]},` +
			`{"id":"l","tool":"allow-*","when":` + string(src) + `,"action":"allow"},` +
			`{"id":"rest","action":"deny","reason":"r"}]}`
		p, err := Parse([]byte(doc))
		if err != nil {
			return
		}
		for _, tool := range []string{"deny-t", "ask-t", "allow-t"} {
			d := p.Decide(Call{Server: "s", Tool: tool, Arguments: args})
			// What each rule decides when its condition holds, when it does
			// not (the last rule denies), and so when it faults.
			switch {
			case d.Fault != "" && d.Action != Deny && !(tool == "ask-t" && d.Action == Ask):
				t.Fatalf("%s: a fault gave %s (%q); want deny, or ask from the ask rule", tool, d.Action, d.Fault)
			case d.Fault == "" && tool == "deny-t" && d.Action != Deny:
				t.Fatalf("%s: %s; both answers deny", tool, d.Action)
			case len(d.Fault) > MaxFaultLen+len("…"):
				t.Fatalf("fault of %d bytes", len(d.Fault))
			}
		}
	})
}

// FuzzArgs checks the arguments reader against encoding/json: what it
// reads is a JSON object encoding/json reads to the same value, and its
// canonical form reads back to itself.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"b":1,"a":[true,false,null,-0.5e+3,"\u00e9\ud83d\ude00\n"]}`, `{"a":{"a":{}}}`, `{"a":1,"a":2}`,
		`{"a":"\udc00"}`, `{"a":1e400}`, `[1]`, ` {"a" : 1 } `, "{\"a\":\"\xff\"}", `{"a":12345678901234567890}`,
		`{"a":[1,{"b":null,"c":"é"}],"b":-0,"c":123456789012345678}`, `{"b":1,"a":2}`, `{"a":"<\\>"}`, `{"a":01}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a := readArgs(raw, true)
		// ArgsDigest hashes canonical arguments as they are: only those
		// the reader takes and writes back byte for byte.
		if d := ArgsDigest(raw); d != a.digest() {
			t.Fatalf("ArgsDigest(%q) = %s; the reader's digest is %s", raw, d, a.digest())
		}
		if isCanonical(raw) && (a.fault != nil || !bytes.Equal(a.canon, raw)) {
			t.Fatalf("isCanonical(%q), but the reader writes %q (%v)", raw, a.canon, a.fault)
		}
		validObject := json.Valid(raw) && bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{"))
		if len(bytes.TrimSpace(raw)) == 0 {
			validObject = true
		}
		if a.fault != nil {
			if d := ArgsDigest(raw); !strings.HasPrefix(d, "sha256-raw:") {
				t.Fatalf("unreadable arguments digest as %s", d)
			}
			return
		}
		if !validObject {
			t.Fatalf("read %q, which encoding/json refuses as an object", raw)
		}
		if strings.HasPrefix(ArgsDigest(raw), "sha256-raw:") {
			t.Fatal("readable arguments got a raw digest")
		}
		// The canonical form means the same JSON value.
		var want, got any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if len(bytes.TrimSpace(raw)) == 0 {
			want = map[string]any{}
		} else if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		dec = json.NewDecoder(bytes.NewReader(a.canon))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("the canonical form %q is not JSON: %v", a.canon, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("canonical form %q reads as %v; the arguments read as %v", a.canon, got, want)
		}
		// And is its own canonical form.
		again := readArgs(a.canon, true)
		if again.fault != nil || !bytes.Equal(again.canon, a.canon) {
			t.Fatalf("canonical form %q is not canonical: %q, %v", a.canon, again.canon, again.fault)
		}
	})
}

package aep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/corpus"
)

func TestGoldenCorpusValidates(t *testing.T) {
	f, err := os.Open(corpus.Fixture(t, "golden/golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, passed := 0, 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		ev, err := Parse(line)
		if err != nil {
			t.Errorf("golden line %d: %v", n, err)
			continue
		}
		// Round trip: extension attributes and every attribute survive.
		out, err := json.Marshal(ev)
		if err != nil {
			t.Errorf("golden line %d: encoding: %v", n, err)
			continue
		}
		if !jsonEqual(t, line, out) {
			t.Errorf("golden line %d: round trip changed the event:\n got %s\nwant %s", n, out, line)
			continue
		}
		passed++
	}
	if n == 0 {
		t.Fatal("golden corpus is empty")
	}
	t.Logf("golden %d/%d", passed, n)
}

type invalidCase struct {
	Name   string            `json:"name"`
	Rule   string            `json:"rule"`
	Event  json.RawMessage   `json:"event"`
	Events []json.RawMessage `json:"events"`
}

func TestInvalidCorpusSingleEventsFail(t *testing.T) {
	var file struct {
		Cases []invalidCase `json:"cases"`
	}
	corpus.LoadJSON(t, "invalid/cases.json", &file)
	n, passed := 0, 0
	for _, c := range file.Cases {
		if c.Event == nil {
			continue // stream cases: checked by the stream validator
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			_, err := Parse(c.Event)
			if err == nil {
				t.Fatalf("Parse accepted an invalid event (rule %s)", c.Rule)
			}
			ve, ok := err.(*ValidationError)
			if !ok {
				t.Fatalf("error %T %v is not a *ValidationError", err, err)
			}
			// The error names the rule: the same document, and a section
			// the case cites (or its parent section).
			if !citesRule(c.Rule, ve.Rule) {
				t.Fatalf("error names rule %q; want one naming %q (%v)", ve.Rule, c.Rule, err)
			}
			passed++
		})
	}
	t.Logf("invalid single-event %d/%d", passed, n)
}

type downlevelCase struct {
	Name          string          `json:"name"`
	Ceiling       string          `json:"ceiling"`
	Event         json.RawMessage `json:"event"`
	ExpectCapture string          `json:"expect_capture"`
	ExpectData    json.RawMessage `json:"expect_data"`
}

func TestDownlevelCorpus(t *testing.T) {
	var file struct {
		Cases []downlevelCase `json:"cases"`
	}
	corpus.LoadJSON(t, "downlevel/cases.json", &file)
	passed := 0
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ev, err := Parse(c.Event)
			if err != nil {
				t.Fatalf("input event invalid: %v", err)
			}
			ceiling, err := ParseCapture(c.Ceiling)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Downlevel(*ev, ceiling)
			if err != nil {
				t.Fatalf("Downlevel: %v", err)
			}
			if got.EffectiveCapture().String() != c.ExpectCapture {
				t.Errorf("capture: got %s; want %s", got.EffectiveCapture(), c.ExpectCapture)
			}
			wantData := c.ExpectData
			if string(bytes.TrimSpace(wantData)) == "null" {
				wantData = nil
			}
			if (wantData == nil) != (got.Data == nil) || (wantData != nil && !jsonEqual(t, wantData, got.Data)) {
				t.Errorf("data:\n got %s\nwant %s", got.Data, c.ExpectData)
			}
			// The rewritten event still validates.
			if err := got.Validate(); err != nil {
				t.Errorf("down-leveled event invalid: %v", err)
			}
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("downlevel %d/%d", passed, len(file.Cases))
}

type redactionFile struct {
	TextCases []struct {
		Name           string   `json:"name"`
		Opts           redOpts  `json:"opts"`
		Input          string   `json:"input"`
		MustContain    []string `json:"must_contain"`
		MustNotContain []string `json:"must_not_contain"`
	} `json:"text_cases"`
	ValueCases []struct {
		Name           string   `json:"name"`
		Input          any      `json:"input"`
		MustContain    []string `json:"must_contain"`
		MustNotContain []string `json:"must_not_contain"`
	} `json:"value_cases"`
}

type redOpts struct {
	SecretValues []string `json:"secretValues"`
	Home         string   `json:"home"`
	PII          *bool    `json:"pii"`
}

func (o redOpts) options() RedactOptions {
	return RedactOptions{Secrets: o.SecretValues, Home: o.Home, DisablePII: o.PII != nil && !*o.PII}
}

func TestRedactionCorpus(t *testing.T) {
	var file redactionFile
	corpus.LoadJSON(t, "redaction/cases.json", &file)
	total, passed := 0, 0
	check := func(t *testing.T, out string, must, mustNot []string) {
		t.Helper()
		for _, s := range must {
			if !strings.Contains(out, s) {
				t.Errorf("output %q lacks %q", out, s)
			}
		}
		for _, s := range mustNot {
			if strings.Contains(out, s) {
				t.Errorf("output %q still contains %q", out, s)
			}
		}
	}
	for _, c := range file.TextCases {
		total++
		t.Run("text/"+c.Name, func(t *testing.T) {
			out := NewRedactor(c.Opts.options()).Text(c.Input)
			check(t, out, c.MustContain, c.MustNotContain)
			if !t.Failed() {
				passed++
			}
		})
	}
	for _, c := range file.ValueCases {
		total++
		t.Run("value/"+c.Name, func(t *testing.T) {
			out, err := json.Marshal(NewRedactor(RedactOptions{}).Value(c.Input))
			if err != nil {
				t.Fatal(err)
			}
			check(t, string(out), c.MustContain, c.MustNotContain)
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("redaction %d/%d", passed, total)
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("decoding %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

var sectionRe = regexp.MustCompile(`(AEP-\d{4})?\s*(§[0-9.]+)`)

// citesRule reports whether got ("AEP-0002 §5 payload schema") names the
// document and a section, or a parent of a section, that want cites
// ("AEP-0002 §4.2/§5 payload schema (...)").
func citesRule(want, got string) bool {
	g := sectionRe.FindStringSubmatch(got)
	if g == nil || g[1] == "" {
		return false
	}
	doc := ""
	for _, m := range sectionRe.FindAllStringSubmatch(strings.ReplaceAll(want, "/", " "), -1) {
		if m[1] != "" {
			doc = m[1]
		}
		sec := strings.TrimRight(m[2], ".")
		if doc == g[1] && (sec == g[2] || strings.HasPrefix(sec, g[2]+".")) {
			return true
		}
	}
	return false
}

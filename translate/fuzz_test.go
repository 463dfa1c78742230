package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func FuzzParse(f *testing.F) {
	// Small seeds keep the engine's minimization fast; together they hold
	// every construct of the kitchen-sink schema.
	f.Add(`{"type":"object","properties":{"s":{"type":"string","title":"S","minLength":1,"maxLength":9,"format":"email","default":"a"}},"required":["s"]}`)
	f.Add(`{"type":"object","properties":{"i":{"type":"integer","minimum":1,"maximum":100,"default":42},"n":{"type":"number","exclusiveMaximum":9.5},"b":{"type":"boolean","default":true}}}`)
	f.Add(`{"type":"object","properties":{"o":{"type":"string","oneOf":[{"const":"h1","title":"Superman"}]},"l":{"type":"string","enum":["p1"],"enumNames":["Cats"]}}}`)
	f.Add(`{"type":"object","properties":{"m":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["G","P"]},"default":["G"]}}}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"string","enum":["x"]}}}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]}}},"required":["a"]}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"object"}}}`)
	// Extension members, secrets and exact bounds.
	f.Add(`{"type":"object","properties":{"p":{"type":"string","format":"password","description":"d","default":"x","pattern":"^a+$"},"pin":{"type":"integer","writeOnly":true,"default":1}}}`)
	f.Add(`{"type":"object","properties":{"i":{"type":"integer","minimum":-9223372036854775808,"maximum":1e30,"multipleOf":1e-3},"n":{"type":"number","exclusiveMinimum":1e400}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		form, err := Parse("m", json.RawMessage(s))
		if err != nil {
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("Parse returned %T, not *UnsupportedError: %v", err, err)
			}
			return
		}
		// Whatever parses projects onto valid field specs.
		specs := form.FieldSpecs()
		data, err := json.Marshal(aep.AttentionRequested{Kind: "form", Prompt: "p", Fields: specs})
		if err != nil {
			t.Fatal(err)
		}
		ev := aep.Event{AEP: aep.Version, ID: "x", Type: "attention.requested", Time: "2026-01-01T00:00:00Z",
			Source: "aep://h/agent/a/session/s", Agent: "a", Session: "s", Seq: aep.Int64(0), Capture: aep.CaptureFull, Data: data}
		if err := ev.Validate(); err != nil {
			t.Fatalf("projection of %s is not a valid event: %v", s, err)
		}
		for i, spec := range specs {
			if spec.Secret && spec.Default != nil {
				t.Fatalf("secret field %q carries its default", spec.ID)
			}
			if spec.ID != form.Fields[i].ID {
				t.Fatalf("field %d is %q; the schema declares %q there", i, spec.ID, form.Fields[i].ID)
			}
		}
	})
}

// numbersSchema has exact bounds around the int64 and float64 limits and
// secret fields, for FuzzValidate.
const numbersSchema = `{"type":"object","properties":{
	"i":{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807},
	"big":{"type":"integer","exclusiveMinimum":9007199254740992},
	"n":{"type":"number","multipleOf":0.1,"maximum":1e300},
	"password":{"type":"string","minLength":8},
	"pin":{"type":"integer","writeOnly":true}}}`

func FuzzValidate(f *testing.F) {
	msg, schema := kitchenSink(f)
	sink, err := Parse(msg, schema)
	if err != nil {
		f.Fatal(err)
	}
	numbers, err := Parse("m", json.RawMessage(numbersSchema))
	if err != nil {
		f.Fatal(err)
	}
	b, _ := json.Marshal(validKitchenSinkValues())
	f.Add(string(b))
	f.Add(`{"name":"x","integer":1e400}`)
	f.Add(`{"name":"x","untitledMultipleSelectEnum":["Guitar","Guitar"]}`)
	f.Add(`{"i":9223372036854775807,"big":9007199254740993,"n":0.3,"password":"s3cretpass","pin":1e3}`)
	f.Add(`{"i":-9223372036854775809,"big":1e18,"n":-0,"pin":1.0}`)
	f.Add(`{"i":1e999999999,"n":1e-400,"pin":18446744073709551616}`)
	f.Fuzz(func(t *testing.T, s string) {
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.UseNumber()
		var values map[string]any
		if dec.Decode(&values) != nil || values == nil {
			return
		}
		for _, form := range []*Form{sink, numbers} {
			checkDecision(t, form, values)
		}
	})
}

// checkDecision decides values and checks what an accepted answer sends:
// only schema keys, integers as plain digits, and content that decodes
// back to an answer that validates and sends the same bytes.
func checkDecision(t *testing.T, form *Form, values map[string]any) {
	d, err := form.Decide(aep.Answer{Values: values})
	if err != nil {
		var ia *InvalidAnswer
		if !errors.As(err, &ia) {
			t.Fatalf("Decide returned %T: %v", err, err)
		}
		return
	}
	first, err := json.Marshal(d.Result())
	if err != nil {
		t.Fatalf("encoding accepted content: %v", err)
	}
	for k, v := range d.Content {
		fld, ok := form.Field(k)
		if !ok {
			t.Fatalf("content carries key %q outside the schema", k)
		}
		if n, ok := v.(json.Number); fld.Kind == KindInteger && (!ok || strings.Trim(string(n), "-0123456789") != "") {
			t.Fatalf("integer field %q sends %v, not plain digits", k, v)
		}
	}
	content, _ := json.Marshal(d.Content)
	dec := json.NewDecoder(bytes.NewReader(content))
	dec.UseNumber()
	var again map[string]any
	if err := dec.Decode(&again); err != nil {
		t.Fatal(err)
	}
	d2, err := form.Decide(aep.Answer{Values: again})
	if err != nil {
		t.Fatalf("the content sent for an accepted answer does not validate: %v", err)
	}
	if second, _ := json.Marshal(d2.Result()); !bytes.Equal(first, second) {
		t.Fatalf("content is not stable:\n %s\n %s", first, second)
	}
}

func BenchmarkParseKitchenSink(b *testing.B) {
	msg, schema := kitchenSink(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(msg, schema); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateKitchenSink(b *testing.B) {
	msg, schema := kitchenSink(b)
	form, err := Parse(msg, schema)
	if err != nil {
		b.Fatal(err)
	}
	v := validKitchenSinkValues()
	b.ReportAllocs()
	for b.Loop() {
		if err := form.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzFormats feeds any string to the four format checks: none may panic,
// and what each accepts has the shape ajv-formats requires of it.
func FuzzFormats(f *testing.F) {
	for _, s := range []string{"user@example.com", "jörg@example.com", "https://[::1]:80/a?b#c", "urn:x", "2024-02-29",
		"2024-12-31t23:59:60z", "2024-01-01\u00a010:00:00+0100", "http://[v1.fe]/", "a@b.c"} {
		f.Add(s)
	}
	ascii := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 || s[i] <= ' ' {
				return false
			}
		}
		return true
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validFormat("email", s) && (!ascii(s) || strings.Count(s, "@") != 1 || strings.HasSuffix(s, ".")) {
			t.Fatalf("email accepted %q", s)
		}
		if validFormat("uri", s) && (!ascii(s) || !strings.ContainsAny(s, ":/") || strings.Count(s, "#") > 1) {
			t.Fatalf("uri accepted %q", s)
		}
		if validFormat("date", s) && (len(s) != 10 || !validDateTime(s+"T00:00:00Z")) {
			t.Fatalf("date accepted %q", s)
		}
		if validFormat("date-time", s) && !validDate(s[:10]) {
			t.Fatalf("date-time accepted %q, whose date is not one", s)
		}
	})
}

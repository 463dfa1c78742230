package translate

import (
	"bytes"
	"encoding/json"
	"errors"
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
	})
}

func FuzzValidate(f *testing.F) {
	msg, schema := kitchenSink(f)
	form, err := Parse(msg, schema)
	if err != nil {
		f.Fatal(err)
	}
	b, _ := json.Marshal(validKitchenSinkValues())
	f.Add(string(b))
	f.Add(`{"name":"x","integer":1e400}`)
	f.Add(`{"name":"x","untitledMultipleSelectEnum":["Guitar","Guitar"]}`)
	f.Fuzz(func(t *testing.T, s string) {
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.UseNumber()
		var values map[string]any
		if dec.Decode(&values) != nil || values == nil {
			return
		}
		d, err := form.Decide(aep.Answer{Values: values})
		if err != nil {
			var ia *InvalidAnswer
			if !errors.As(err, &ia) {
				t.Fatalf("Decide returned %T: %v", err, err)
			}
			return
		}
		// Accepted content re-validates and encodes.
		if _, err := json.Marshal(d.Result()); err != nil {
			t.Fatalf("encoding accepted content: %v", err)
		}
		for k := range d.Content {
			if _, ok := form.Field(k); !ok {
				t.Fatalf("content carries key %q outside the schema", k)
			}
		}
	})
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

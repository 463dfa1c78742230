package translate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/fixture"
)

// kitchenSink loads the 2025-11-25 schema that server-everything's
// trigger-elicitation-request sends.
func kitchenSink(t testing.TB) (string, json.RawMessage) {
	t.Helper()
	return fixture.KitchenSink(t)
}

func TestParseKitchenSink(t *testing.T) {
	msg, schema := kitchenSink(t)
	f, err := Parse(msg, schema)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wantOrder := []string{"name", "check", "firstLine", "email", "homepage", "birthdate", "integer", "number",
		"untitledSingleSelectEnum", "untitledMultipleSelectEnum", "titledSingleSelectEnum", "titledMultipleSelectEnum", "legacyTitledEnum"}
	var got []string
	for _, fld := range f.Fields {
		got = append(got, fld.ID)
	}
	if !reflect.DeepEqual(got, wantOrder) {
		t.Fatalf("field order: got %v; want %v", got, wantOrder)
	}
	kinds := map[string]Kind{"name": KindString, "check": KindBoolean, "integer": KindInteger, "number": KindNumber,
		"untitledSingleSelectEnum": KindSelect, "untitledMultipleSelectEnum": KindMultiSelect,
		"titledSingleSelectEnum": KindSelect, "titledMultipleSelectEnum": KindMultiSelect, "legacyTitledEnum": KindSelect}
	for id, k := range kinds {
		fld, _ := f.Field(id)
		if fld.Kind != k {
			t.Errorf("%s: kind %s; want %s", id, fld.Kind, k)
		}
	}
	if fld, _ := f.Field("name"); !fld.Required {
		t.Error("name: want required")
	}
	if fld, _ := f.Field("legacyTitledEnum"); fld.Choices[1] != (Choice{ID: "pet-2", Title: "Dogs"}) {
		t.Errorf("legacy enumNames: got %+v", fld.Choices[1])
	}
	if fld, _ := f.Field("titledMultipleSelectEnum"); fld.Choices[2] != (Choice{ID: "fish-3", Title: "Trout"}) || *fld.MaxItems != 3 {
		t.Errorf("titled multi-select: got %+v", fld)
	}
}

func TestParseUnsupported(t *testing.T) {
	tests := []struct {
		name     string
		schema   string
		wantPath string
		wantIn   string
	}{
		{"nested object", `{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}}}`, "properties.address", "nested objects"},
		{"array of objects", `{"type":"object","properties":{"people":{"type":"array","items":{"type":"object"}}}}`, "properties.people", "arrays of objects"},
		{"ref", `{"type":"object","properties":{"x":{"$ref":"#/$defs/x"}}}`, "properties.x", "$ref"},
		{"unknown type", `{"type":"object","properties":{"x":{"type":"date"}}}`, "properties.x", "unknown type"},
		{"enum of non-strings", `{"type":"object","properties":{"x":{"type":"string","enum":[1,2]}}}`, "properties.x", "strings only"},
		{"union type", `{"type":"object","properties":{"x":{"type":["string","null"]}}}`, "properties.x", "single type"},
		{"unknown format", `{"type":"object","properties":{"x":{"type":"string","format":"hostname"}}}`, "properties.x", "format"},
		{"top-level not object", `{"type":"array"}`, "type", "object"},
		{"top-level allOf", `{"type":"object","allOf":[]}`, "allOf", "allOf"},
		{"required names no property", `{"type":"object","properties":{},"required":["ghost"]}`, "required", "ghost"},
		{"impossible bounds", `{"type":"object","properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`, "properties.n", "minimum"},
		{"enumNames length", `{"type":"object","properties":{"x":{"type":"string","enum":["a","b"],"enumNames":["A"]}}}`, "properties.x", "enumNames"},
		{"duplicate choice", `{"type":"object","properties":{"x":{"type":"string","enum":["a","a"]}}}`, "properties.x", "twice"},
		{"oneOf without const", `{"type":"object","properties":{"x":{"type":"string","oneOf":[{"title":"A"}]}}}`, "properties.x", "const"},
		{"array of numbers", `{"type":"object","properties":{"x":{"type":"array","items":{"type":"number"}}}}`, "properties.x", "arrays of number"},
		{"not an object", `[1,2]`, "", "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("m", json.RawMessage(tt.schema))
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v; want *UnsupportedError", err)
			}
			if ue.Path != tt.wantPath {
				t.Errorf("path: got %q; want %q", ue.Path, tt.wantPath)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q does not mention %q", err, tt.wantIn)
			}
		})
	}
}

func validKitchenSinkValues() map[string]any {
	return map[string]any{
		"name": "Ada Lovelace", "check": true, "firstLine": "Call me Ishmael.", "email": "ada@example.com",
		"homepage": "https://example.com/ada", "birthdate": "1815-12-10", "integer": json.Number("7"),
		"number": json.Number("2.5"), "untitledSingleSelectEnum": "Ross",
		"untitledMultipleSelectEnum": []any{"Piano", "Drums"}, "titledSingleSelectEnum": "hero-3",
		"titledMultipleSelectEnum": []any{"fish-2"}, "legacyTitledEnum": "pet-4",
	}
}

func TestValidate(t *testing.T) {
	msg, schema := kitchenSink(t)
	f, err := Parse(msg, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(validKitchenSinkValues()); err != nil {
		t.Fatalf("valid answer rejected: %v", err)
	}
	tests := []struct {
		name      string
		field     string
		value     any
		remove    bool
		wantField string
		wantRule  string
	}{
		{"required missing", "name", nil, true, "name", "required"},
		{"wrong type string", "name", json.Number("3"), false, "name", "type"},
		{"null is not a string", "name", nil, false, "name", "type"},
		{"integer-ness", "integer", json.Number("7.5"), false, "integer", "type"},
		{"integral float is an integer", "integer", json.Number("7.0"), false, "", ""},
		{"minimum", "integer", json.Number("0"), false, "integer", "minimum"},
		{"maximum", "integer", json.Number("101"), false, "integer", "maximum"},
		{"number maximum", "number", 1000.5, false, "number", "maximum"},
		{"email format", "email", "not-an-email", false, "email", "format"},
		{"email with display name", "email", "Ada <ada@example.com>", false, "email", "format"},
		{"uri format", "homepage", "example.com/no-scheme", false, "homepage", "format"},
		{"date format", "birthdate", "10/12/1815", false, "birthdate", "format"},
		{"enum membership", "untitledSingleSelectEnum", "Gunther", false, "untitledSingleSelectEnum", "enum"},
		{"titled enum takes the const, not the title", "titledSingleSelectEnum", "Superman", false, "titledSingleSelectEnum", "enum"},
		{"multi not an array", "untitledMultipleSelectEnum", "Piano", false, "untitledMultipleSelectEnum", "type"},
		{"minItems", "untitledMultipleSelectEnum", []any{}, false, "untitledMultipleSelectEnum", "minItems"},
		{"maxItems", "untitledMultipleSelectEnum", []any{"Guitar", "Piano", "Violin", "Drums"}, false, "untitledMultipleSelectEnum", "maxItems"},
		{"multi item not a choice", "titledMultipleSelectEnum", []any{"fish-9"}, false, "titledMultipleSelectEnum", "enum"},
		{"duplicate items", "titledMultipleSelectEnum", []any{"fish-1", "fish-1"}, false, "titledMultipleSelectEnum", "uniqueItems"},
		{"boolean type", "check", "yes", false, "check", "type"},
		{"unknown key", "surprise", "x", false, "", "properties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := validKitchenSinkValues()
			if tt.remove {
				delete(v, tt.field)
			} else {
				v[tt.field] = tt.value
			}
			err := f.Validate(v)
			if tt.wantRule == "" {
				if err != nil {
					t.Fatalf("got %v; want no error", err)
				}
				return
			}
			var ia *InvalidAnswer
			if !errors.As(err, &ia) {
				t.Fatalf("got %v; want *InvalidAnswer", err)
			}
			if ia.Field != tt.wantField || ia.Rule != tt.wantRule {
				t.Fatalf("got field %q rule %q; want field %q rule %q", ia.Field, ia.Rule, tt.wantField, tt.wantRule)
			}
			if s, ok := tt.value.(string); ok && s != "" && strings.Contains(err.Error(), s) {
				t.Errorf("error %q quotes the answer's text", err)
			}
		})
	}
}

func TestValidateStringConstraints(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{
		"code":{"type":"string","minLength":2,"maxLength":4,"pattern":"^[A-Z]+$"},
		"when":{"type":"string","format":"date-time"},
		"step":{"type":"number","multipleOf":0.5,"exclusiveMinimum":0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		values   map[string]any
		wantRule string
	}{
		{"ok", map[string]any{"code": "ABÇ", "when": "2026-12-02T10:00:00Z", "step": 1.5}, "pattern"},
		{"ok ascii", map[string]any{"code": "ABC", "when": "2026-12-02T10:00:00+01:00", "step": 1.5}, ""},
		{"minLength counts characters", map[string]any{"code": "A"}, "minLength"},
		{"maxLength", map[string]any{"code": "ABCDE"}, "maxLength"},
		{"date-time", map[string]any{"when": "2026-12-02 10:00"}, "format"},
		{"multipleOf", map[string]any{"step": 0.75}, "multipleOf"},
		{"exclusiveMinimum", map[string]any{"step": 0}, "exclusiveMinimum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.Validate(tt.values)
			if tt.wantRule == "" {
				if err != nil {
					t.Fatalf("got %v; want nil", err)
				}
				return
			}
			var ia *InvalidAnswer
			if !errors.As(err, &ia) || ia.Rule != tt.wantRule {
				t.Fatalf("got %v; want rule %s", err, tt.wantRule)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	msg, schema := kitchenSink(t)
	f, err := Parse(msg, schema)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		answer   aep.Answer
		want     Outcome
		wantRule string
	}{
		{"values accept", aep.Answer{Values: validKitchenSinkValues()}, OutcomeAccept, ""},
		{"option accept with values", aep.Answer{Option: "accept", Values: validKitchenSinkValues()}, OutcomeAccept, ""},
		{"decline option", aep.Answer{Option: "decline"}, OutcomeDecline, ""},
		{"decline text trimmed any case", aep.Answer{Text: "  DeCline \n"}, OutcomeDecline, ""},
		{"cancel option", aep.Answer{Option: "cancel"}, OutcomeCancel, ""},
		{"other text", aep.Answer{Text: "sure, go ahead"}, 0, "AEP-0008"},
		{"unknown option", aep.Answer{Option: "maybe"}, 0, "answer"},
		{"empty", aep.Answer{}, 0, "answer"},
		{"decline with values", aep.Answer{Option: "decline", Values: map[string]any{}}, 0, "answer"},
		{"invalid values", aep.Answer{Values: map[string]any{"name": 3}}, 0, "type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := f.Decide(tt.answer)
			if tt.wantRule != "" {
				var ia *InvalidAnswer
				if !errors.As(err, &ia) || ia.Rule != tt.wantRule {
					t.Fatalf("got %v; want rule %s", err, tt.wantRule)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Outcome != tt.want {
				t.Fatalf("outcome %v; want %v", d.Outcome, tt.want)
			}
		})
	}
}

func TestContentIsTyped(t *testing.T) {
	msg, schema := kitchenSink(t)
	f, err := Parse(msg, schema)
	if err != nil {
		t.Fatal(err)
	}
	v := validKitchenSinkValues()
	v["integer"] = 7.0 // a float64 from a generic decoder
	d, err := f.Decide(aep.Answer{Values: v})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d.Result())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["action"] != "accept" {
		t.Fatalf("action: got %v", got["action"])
	}
	c := got["content"].(map[string]any)
	if !strings.Contains(string(b), `"integer":7,`) && !strings.Contains(string(b), `"integer":7}`) {
		t.Errorf("integer not encoded as an integer: %s", b)
	}
	if !strings.Contains(string(b), `"number":2.5`) {
		t.Errorf("number lost: %s", b)
	}
	if !reflect.DeepEqual(c["untitledMultipleSelectEnum"], []any{"Piano", "Drums"}) {
		t.Errorf("multi-select: got %v", c["untitledMultipleSelectEnum"])
	}
	if _, ok := d.Content["untitledMultipleSelectEnum"].([]string); !ok {
		t.Errorf("multi-select content is %T; want []string", d.Content["untitledMultipleSelectEnum"])
	}
	if len(c) != 13 {
		t.Errorf("content has %d keys; want 13", len(c))
	}
	if b, _ := json.Marshal(CancelResult()); string(b) != `{"action":"cancel"}` {
		t.Errorf("cancel result: %s", b)
	}
}

// TestURLAcceptOmitsContent: MCP 2025-11-25 omits content for URL mode; a
// form accept with no values still sends an empty object.
func TestURLAcceptOmitsContent(t *testing.T) {
	tests := []struct {
		name string
		d    Decision
		want string
	}{
		{"URL accept", Decision{Outcome: OutcomeAccept, Applied: aep.Answer{Option: "accept"}}, `{"action":"accept"}`},
		{"decline", Decision{Outcome: OutcomeDecline}, `{"action":"decline"}`},
		{"form accept with no values", Decision{Outcome: OutcomeAccept, Content: map[string]any{}}, `{"action":"accept","content":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.d.Result())
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got %s; want %s", b, tt.want)
			}
		})
	}
}

func TestInvalidAnswerSaysEachPartOnce(t *testing.T) {
	tests := []struct {
		name string
		err  InvalidAnswer
		want string
	}{
		{"a rule about the answer itself", InvalidAnswer{Rule: "answer", Reason: "text and values together are ambiguous"}, "answer: text and values together are ambiguous"},
		{"an AEP rule about the answer", InvalidAnswer{Rule: "AEP-0008", Reason: "text is accepted only as decline"}, "answer: AEP-0008: text is accepted only as decline"},
		{"a field", InvalidAnswer{Field: "n", Rule: "maximum", Reason: "must be at most 3"}, `field "n": maximum: must be at most 3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}

// TestUnknownKeysAreNotQuoted: a value under a key the form lacks is
// refused with a detail naming the form's fields, never the key, which is
// the operator's own text.
func TestUnknownKeysAreNotQuoted(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = f.Validate(map[string]any{"env": "prod", "hunter2-as-a-key": "x"})
	want := `answer: properties: 1 value(s) name no field of this form; its fields are "env"`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v; want %s", err, want)
	}
}

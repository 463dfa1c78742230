package aep

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIntegerFieldsRoundTrip(t *testing.T) {
	fields := []FieldSpec{{ID: "n", Type: "number", Integer: true}, {ID: "x", Type: "number"}, {ID: `we"ird`, Type: "number", Integer: true}}
	v := IntegerFieldsValue(fields)
	if v != `["n","we\"ird"]` {
		t.Fatalf("IntegerFieldsValue = %s", v)
	}
	if IntegerFieldsValue([]FieldSpec{{ID: "x", Type: "number"}}) != "" {
		t.Fatal("a form without integer fields has a value")
	}
	var ev Event
	if err := ev.SetExtension(ExtIntegerFields, v); err != nil {
		t.Fatal(err)
	}
	// The field specs never carry it: it is not a JSON member.
	b, _ := json.Marshal(fields)
	var decoded []FieldSpec
	json.Unmarshal(b, &decoded)
	if err := MarkIntegerFields(ev.Extensions[ExtIntegerFields], decoded); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fields, decoded); diff != "" {
		t.Fatalf("marked from the envelope (-want +got):\n%s", diff)
	}
}

func TestMarkIntegerFieldsRefusesIllFormedValues(t *testing.T) {
	tests := []struct{ name, raw string }{
		{"not a string", `["n"]`},
		{"a number", `3`},
		{"a string that is not JSON", `"n"`},
		{"an array of numbers", `"[1,2]"`},
		{"an object", `"{\"n\":true}"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fields := []FieldSpec{{ID: "n", Type: "number"}}
			if err := MarkIntegerFields(json.RawMessage(tc.raw), fields); err == nil {
				t.Fatalf("accepted %s", tc.raw)
			}
			if fields[0].Integer {
				t.Fatal("an ill-formed value marked a field")
			}
		})
	}
	if err := MarkIntegerFields(nil, nil); err != nil {
		t.Fatalf("no attribute: %v", err)
	}
}

// FuzzMarkIntegerFields: whatever a peer writes in the attribute, marking
// never panics, and marks only fields the value names.
func FuzzMarkIntegerFields(f *testing.F) {
	f.Add([]byte(`"[\"n\"]"`))
	f.Add([]byte(`"[]"`))
	f.Add([]byte(`"[\"n\",\"n\",\"x\"]"`))
	f.Add([]byte(`null`))
	f.Add([]byte(`"[null]"`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fields := []FieldSpec{{ID: "n", Type: "number"}, {ID: "x", Type: "number"}, {ID: "", Type: "string"}}
		err := MarkIntegerFields(raw, fields)
		var text string
		var ids []string
		named := map[string]bool{}
		if json.Unmarshal(raw, &text) == nil && json.Unmarshal([]byte(text), &ids) == nil {
			for _, id := range ids {
				named[id] = true
			}
		}
		for _, fld := range fields {
			if fld.Integer && (err != nil || !named[fld.ID]) {
				t.Fatalf("%q marked %q (err %v)", raw, fld.ID, err)
			}
		}
	})
}

package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// decodeAnswer decodes values as the control intake does, with UseNumber.
func decodeAnswer(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return v
}

// TestNumberTable answers one field "x" with each number, against integer
// and number fields, with and without bounds, and checks the exact bytes
// of the ElicitResult the server would receive, or the rejection detail.
// Run with -v to print the table.
func TestNumberTable(t *testing.T) {
	const tooLargeDetail = `field "x": type: must be a number no larger than 1.7976931348623157e308 in magnitude, the largest a JSON peer can read`
	tests := []struct {
		name   string
		prop   string // the schema of property x
		answer string // the JSON text of x's answer
		want   string // the ElicitResult's bytes, or the rejection detail
	}{
		// The limits of int64.
		{"int64 max, integer", `{"type":"integer"}`, `9223372036854775807`, `{"action":"accept","content":{"x":9223372036854775807}}`},
		{"int64 max, integer at its maximum", `{"type":"integer","maximum":9223372036854775807}`, `9223372036854775807`, `{"action":"accept","content":{"x":9223372036854775807}}`},
		{"int64 max+1, integer above its maximum", `{"type":"integer","maximum":9223372036854775807}`, `9223372036854775808`, `field "x": maximum: must be at most 9223372036854775807`},
		{"int64 min, integer", `{"type":"integer"}`, `-9223372036854775808`, `{"action":"accept","content":{"x":-9223372036854775808}}`},
		{"int64 min-1, integer below its minimum", `{"type":"integer","minimum":-9223372036854775808}`, `-9223372036854775809`, `field "x": minimum: must be at least -9223372036854775808`},
		{"int64 max, number", `{"type":"number"}`, `9223372036854775807`, `{"action":"accept","content":{"x":9223372036854775807}}`},
		{"int64 max+1, number above its maximum", `{"type":"number","maximum":9223372036854775807}`, `9223372036854775808`, `field "x": maximum: must be at most 9223372036854775807`},
		// Above int64.
		{"2^64, integer", `{"type":"integer"}`, `18446744073709551616`, `{"action":"accept","content":{"x":18446744073709551616}}`},
		{"10^30, integer", `{"type":"integer"}`, `1000000000000000000000000000000`, `{"action":"accept","content":{"x":1000000000000000000000000000000}}`},
		{"1e30, integer", `{"type":"integer"}`, `1e30`, `{"action":"accept","content":{"x":1000000000000000000000000000000}}`},
		{"10^30+1, integer above maximum 1e30", `{"type":"integer","maximum":1e30}`, `1000000000000000000000000000001`, `field "x": maximum: must be at most 1e30`},
		{"2^64, number", `{"type":"number"}`, `18446744073709551616`, `{"action":"accept","content":{"x":18446744073709551616}}`},
		{"1e30, number", `{"type":"number","minimum":0}`, `1e30`, `{"action":"accept","content":{"x":1e30}}`},
		// 2^53 + 1: a float64 reads it as 2^53.
		{"2^53+1, integer", `{"type":"integer"}`, `9007199254740993`, `{"action":"accept","content":{"x":9007199254740993}}`},
		{"2^53+1, integer above maximum 2^53", `{"type":"integer","maximum":9007199254740992}`, `9007199254740993`, `field "x": maximum: must be at most 9007199254740992`},
		{"2^53+1, number above exclusiveMinimum 2^53", `{"type":"number","exclusiveMinimum":9007199254740992}`, `9007199254740993`, `{"action":"accept","content":{"x":9007199254740993}}`},
		{"2^53, number at exclusiveMinimum 2^53", `{"type":"number","exclusiveMinimum":9007199254740992}`, `9007199254740992`, `field "x": exclusiveMinimum: must be greater than 9007199254740992`},
		// 1e18 is an integer (a number with a zero fractional part).
		{"1e18, integer", `{"type":"integer"}`, `1e18`, `{"action":"accept","content":{"x":1000000000000000000}}`},
		{"1e18, integer at its maximum", `{"type":"integer","maximum":1000000000000000000}`, `1e18`, `{"action":"accept","content":{"x":1000000000000000000}}`},
		{"1e18, integer at exclusiveMaximum", `{"type":"integer","exclusiveMaximum":1e18}`, `1e18`, `field "x": exclusiveMaximum: must be less than 1000000000000000000`},
		{"1E+18, integer", `{"type":"integer"}`, `1E+18`, `{"action":"accept","content":{"x":1000000000000000000}}`},
		{"1e18, number", `{"type":"number"}`, `1e18`, `{"action":"accept","content":{"x":1e18}}`},
		{"1e18, number above maximum", `{"type":"number","maximum":999999999999999999}`, `1e18`, `field "x": maximum: must be at most 999999999999999999`},
		// -0 is 0.
		{"-0, integer", `{"type":"integer"}`, `-0`, `{"action":"accept","content":{"x":0}}`},
		{"-0, integer at exclusiveMinimum 0", `{"type":"integer","exclusiveMinimum":0}`, `-0`, `field "x": exclusiveMinimum: must be greater than 0`},
		{"-0, number", `{"type":"number"}`, `-0`, `{"action":"accept","content":{"x":-0}}`},
		{"-0, number at minimum 0", `{"type":"number","minimum":0,"maximum":0}`, `-0`, `{"action":"accept","content":{"x":-0}}`},
		// 1e400 is beyond every double.
		{"1e400, integer", `{"type":"integer"}`, `1e400`, tooLargeDetail},
		{"1e400, number", `{"type":"number"}`, `1e400`, tooLargeDetail},
		{"-1e400, number with bounds", `{"type":"number","minimum":-10,"maximum":10}`, `-1e400`, tooLargeDetail},
		{"1e999999999, integer", `{"type":"integer"}`, `1e999999999`, tooLargeDetail},
		// 1.0 is an integer.
		{"1.0, integer", `{"type":"integer"}`, `1.0`, `{"action":"accept","content":{"x":1}}`},
		{"1.0, integer with bounds", `{"type":"integer","minimum":1,"maximum":1}`, `1.0`, `{"action":"accept","content":{"x":1}}`},
		{"1.0, number", `{"type":"number"}`, `1.0`, `{"action":"accept","content":{"x":1.0}}`},
		// 1.5 is not.
		{"1.5, integer", `{"type":"integer"}`, `1.5`, `field "x": type: must be an integer`},
		{"1.5, integer with bounds", `{"type":"integer","minimum":1,"maximum":2}`, `1.5`, `field "x": type: must be an integer`},
		{"1.5, number", `{"type":"number"}`, `1.5`, `{"action":"accept","content":{"x":1.5}}`},
		{"1.5, number above maximum", `{"type":"number","maximum":1.25}`, `1.5`, `field "x": maximum: must be at most 1.25`},
		{"1.5, number multipleOf 0.5", `{"type":"number","multipleOf":0.5}`, `1.5`, `{"action":"accept","content":{"x":1.5}}`},
		// Edges of the exact arithmetic.
		{"0.3, number multipleOf 0.1", `{"type":"number","multipleOf":0.1}`, `0.3`, `{"action":"accept","content":{"x":0.3}}`},
		{"0.35, number multipleOf 0.1", `{"type":"number","multipleOf":0.1}`, `0.35`, `field "x": multipleOf: must be a multiple of 0.1`},
		{"99, integer below minimum 1e2", `{"type":"integer","minimum":1e2}`, `99`, `field "x": minimum: must be at least 100`},
		{"5e-324, number", `{"type":"number","exclusiveMinimum":0}`, `5e-324`, `{"action":"accept","content":{"x":5e-324}}`},
		{"1e-400, number", `{"type":"number"}`, `1e-400`, `field "x": type: must be 0 or a number no smaller than 5e-324 in magnitude; smaller numbers read as 0`},
		{"0e999999999, integer", `{"type":"integer"}`, `0e999999999`, `{"action":"accept","content":{"x":0}}`},
		{"1001 significant digits, number", `{"type":"number"}`, "1." + strings.Repeat("1", 1000), `field "x": type: must be a number of at most 1000 significant digits`},
		{"a string, number", `{"type":"number"}`, `"7"`, `field "x": type: must be a number, not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"x":`+tt.prop+`}}`))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			d, err := f.Decide(aep.Answer{Values: decodeAnswer(t, `{"x":`+tt.answer+`}`)})
			var got string
			if err != nil {
				var ia *InvalidAnswer
				if !errors.As(err, &ia) {
					t.Fatalf("got %T %v; want *InvalidAnswer", err, err)
				}
				got = err.Error()
			} else {
				b, err := json.Marshal(d.Result())
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if got != tt.want {
				t.Fatalf("%s answered %.40s:\n got %s\nwant %s", tt.prop, tt.answer, got, tt.want)
			}
			t.Logf("%-44s %-40.40s → %s", tt.prop, tt.answer, got)
		})
	}
}

// TestNumbersRecordedAsApplied: attention.answered records what the server
// receives (AEP-0002 §5.3), so an integer answered 1e18 is recorded as its
// digits.
func TestNumbersRecordedAsApplied(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"},"n":{"type":"number"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Decide(aep.Answer{Values: decodeAnswer(t, `{"i":1e18,"n":1e18}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d.Applied)
	if want := `{"values":{"i":1000000000000000000,"n":1e18}}`; string(b) != want {
		t.Fatalf("applied: got %s; want %s", b, want)
	}
}

// TestGoNumbersStayExact: values from a generic decoder (float64) or Go
// code (ints) validate and encode without loss.
func TestGoNumbersStayExact(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{
		"i":{"type":"integer","maximum":9223372036854775807},"u":{"type":"integer"},"n":{"type":"number","multipleOf":0.1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Decide(aep.Answer{Values: map[string]any{"i": int64(9223372036854775807), "u": uint64(18446744073709551615), "n": 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d.Result())
	if want := `{"action":"accept","content":{"i":9223372036854775807,"n":0.3,"u":18446744073709551615}}`; string(b) != want {
		t.Fatalf("got %s; want %s", b, want)
	}
}

func TestSchemaBoundsMustBeReadable(t *testing.T) {
	tests := []struct{ name, prop, wantIn string }{
		{"maximum 1e400", `{"type":"number","maximum":1e400}`, "maximum must be a number no larger than"},
		{"minimum a string", `{"type":"integer","minimum":"1"}`, "minimum must be written as a JSON number"},
		{"multipleOf 0", `{"type":"number","multipleOf":0}`, "multipleOf must be greater than 0"},
		{"minimum above maximum, beyond float64", `{"type":"integer","minimum":9007199254740993,"maximum":9007199254740992}`, "minimum is greater than maximum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"x":`+tt.prop+`}}`))
			var ue *UnsupportedError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("got %v; want an UnsupportedError saying %q", err, tt.wantIn)
			}
		})
	}
}

func TestFieldSpecBoundsAsWritten(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer","minimum":-9223372036854775808,"maximum":1e18}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(f.FieldSpecs())
	if want := `"min":-9223372036854775808,"max":1e18`; !bytes.Contains(b, []byte(want)) {
		t.Fatalf("got %s; want it to hold %s", b, want)
	}
}

func TestJSONNumberGrammar(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"0", true}, {"-0", true}, {"1.5e-3", true}, {"1E+9", true}, {"123", true},
		{"", false}, {"-", false}, {"01", false}, {"1.", false}, {".5", false}, {"1e", false},
		{"+1", false}, {"NaN", false}, {"Infinity", false}, {"0x10", false}, {"1_000", false}, {" 1", false},
	}
	for _, tt := range tests {
		if got := jsonNumberGrammar(tt.s); got != tt.want {
			t.Errorf("jsonNumberGrammar(%q): got %v; want %v", tt.s, got, tt.want)
		}
	}
}

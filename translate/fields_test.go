package translate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func intp(n int) *int { return &n }

// TestFieldSpecsCarryConstraints: every constraint an operator needs rides
// on the field spec, in declared order, with defaults only where they fit.
func TestFieldSpecsCarryConstraints(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{
		"service":{"type":"string","title":"Service name","description":"The service to deploy","minLength":2,"maxLength":40,"pattern":"^[a-z-]+$","default":"checkout"},
		"replicas":{"type":"integer","minimum":1,"maximum":10,"default":2},
		"canary":{"type":"boolean","default":true},
		"checks":{"type":"array","items":{"type":"string","enum":["smoke","load"]},"minItems":1,"maxItems":2,"default":["smoke"]},
		"when":{"type":"string","format":"date-time"},
		"env":{"type":"string","enum":["staging","production"],"default":"qa"},
		"ratio":{"type":"number","default":"half"},
		"share":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1e0,"multipleOf":0.25}
	},"required":["service"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []aep.FieldSpec{
		{ID: "service", Type: "string", Label: "Service name", Required: true, Description: "The service to deploy",
			Default: "checkout", MinLength: intp(2), MaxLength: intp(40), Pattern: "^[a-z-]+$"},
		{ID: "replicas", Type: "number", Label: "replicas", Min: "1", Max: "10", Integer: true, Default: json.Number("2")},
		{ID: "canary", Type: "boolean", Label: "canary", Default: true},
		{ID: "checks", Type: "select", Label: "checks", Multi: true, MinItems: intp(1), MaxItems: intp(2),
			Choices: []aep.Choice{{ID: "smoke", Label: "smoke"}, {ID: "load", Label: "load"}}, Default: []any{"smoke"}},
		{ID: "when", Type: "string", Label: "when", Format: "date-time"},
		// A default that is not one of the choices, or not of the
		// field's type, is left out.
		{ID: "env", Type: "select", Label: "env", Choices: []aep.Choice{{ID: "staging", Label: "staging"}, {ID: "production", Label: "production"}}},
		{ID: "ratio", Type: "number", Label: "ratio"},
		// Exclusive bounds and multipleOf are carried as written.
		{ID: "share", Type: "number", Label: "share", ExclusiveMin: "0", ExclusiveMax: "1e0", MultipleOf: "0.25"},
	}
	if diff := cmp.Diff(want, f.FieldSpecs()); diff != "" {
		t.Fatalf("field specs (-want +got):\n%s", diff)
	}
}

// TestFieldOrderIsDeclared: fields keep the order of requestedSchema's
// properties, not any sorted order.
func TestFieldOrderIsDeclared(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mid":{"type":"boolean"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range f.FieldSpecs() {
		got = append(got, s.ID)
	}
	if diff := cmp.Diff([]string{"zeta", "alpha", "mid"}, got); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

func TestSecretFields(t *testing.T) {
	tests := []struct {
		name string
		prop string
		key  string
		want bool
	}{
		{"format password", `{"type":"string","format":"password"}`, "answer", true},
		{"writeOnly", `{"type":"string","writeOnly":true}`, "answer", true},
		{"writeOnly false", `{"type":"string","writeOnly":false}`, "answer", false},
		{"writeOnly on a select", `{"type":"string","enum":["a","b"],"writeOnly":true}`, "answer", true},
		{"key password", `{"type":"string"}`, "password", true},
		{"title API key", `{"type":"string","title":"Your API key"}`, "k", true},
		{"integer PIN", `{"type":"integer","title":"PIN"}`, "code", true},
		{"number one-time code", `{"type":"number"}`, "one_time_code", true},
		{"token count is not", `{"type":"integer"}`, "token_count", false},
		{"spinner is not", `{"type":"string","title":"Spinner style"}`, "spinner", false},
		{"shipping is not", `{"type":"string"}`, "shipping_address", false},
		{"a boolean named for a password is not", `{"type":"boolean","title":"Remember password"}`, "remember_password", false},
		{"a select named for a token is not", `{"type":"string","enum":["a","b"]}`, "token_kind_choice", false},
		{"plain", `{"type":"string","title":"Name"}`, "name", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"`+tt.key+`":`+tt.prop+`}}`))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := f.Fields[0].Secret; got != tt.want {
				t.Fatalf("Secret: got %v; want %v", got, tt.want)
			}
			if got := f.FieldSpecs()[0].Secret; got != tt.want {
				t.Fatalf("field spec Secret: got %v; want %v", got, tt.want)
			}
		})
	}
}

func TestSecretFieldNeverCarriesItsDefault(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{
		"password":{"type":"string","default":"hunter22"},"pin":{"type":"integer","default":1234,"writeOnly":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(f.FieldSpecs())
	for _, s := range []string{"hunter22", "1234", "default"} {
		if strings.Contains(string(b), s) {
			t.Fatalf("field specs %s carry %q", b, s)
		}
	}
}

func TestPasswordFormat(t *testing.T) {
	f, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","format":"password","minLength":8}},"required":["p"]}`))
	if err != nil {
		t.Fatalf("format password refused: %v", err)
	}
	d, err := f.Decide(aep.Answer{Values: map[string]any{"p": "s3cret pass, with spaces!"}})
	if err != nil {
		t.Fatalf("any string is a password: %v", err)
	}
	if d.Content["p"] != "s3cret pass, with spaces!" {
		t.Fatalf("the server must get the real value: got %v", d.Content["p"])
	}
	_, err = f.Decide(aep.Answer{Values: map[string]any{"p": "s3cret"}})
	if want := `field "p": minLength: must be at least 8 characters`; err == nil || err.Error() != want {
		t.Fatalf("got %v; want %s", err, want)
	}
	if _, err := Parse("m", json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","writeOnly":"yes"}}}`)); err == nil {
		t.Fatal("a non-boolean writeOnly was accepted")
	} else if ue := (*UnsupportedError)(nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), "writeOnly must be a boolean") {
		t.Fatalf("got %v", err)
	}
}

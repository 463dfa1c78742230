package fieldinput

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func ptr(n int) *int { return &n }

var (
	replicas = aep.FieldSpec{ID: "replicas", Type: "number", Label: "Replicas", Min: "1", Max: "10", Default: 2.0}
	service  = aep.FieldSpec{ID: "service", Type: "string", Label: "Service", Required: true, MinLength: ptr(2), Pattern: "^[a-z]+$"}
	canary   = aep.FieldSpec{ID: "canary", Type: "boolean", Label: "Canary", Default: true}
	region   = aep.FieldSpec{ID: "region", Type: "select", Label: "Region", Choices: []aep.Choice{{ID: "eu", Label: "Europe"}, {ID: "us", Label: "US"}}}
	checks   = aep.FieldSpec{ID: "checks", Type: "select", Multi: true, Required: true, Label: "Checks", MaxItems: ptr(2),
		Choices: []aep.Choice{{ID: "smoke", Label: "Smoke"}, {ID: "load", Label: "Load"}, {ID: "sec", Label: "Security"}}}
	password = aep.FieldSpec{ID: "password", Type: "string", Label: "Password", Secret: true, Default: "hunter2"}
	contact  = aep.FieldSpec{ID: "contact", Type: "string", Label: "Contact", Format: "email", Default: "[REDACTED:pii]"}
	// whole is an integer field (named in the event's envelope) with an
	// exclusive bound and a step.
	whole = aep.FieldSpec{ID: "whole", Type: "number", Label: "Whole", Integer: true, ExclusiveMin: "0", MultipleOf: "2"}
)

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		field     aep.FieldSpec
		line      string
		want      any
		wantGiven bool
	}{
		{"a number as written", replicas, " 3.50 ", json.Number("3.50"), true},
		{"an empty line takes the default", replicas, "", json.Number("2"), true},
		{"yes", canary, "Yes", true, true},
		{"n", canary, "n", false, true},
		{"not a boolean is passed on", canary, "maybe", "maybe", true},
		{"a choice by number", region, "2", "us", true},
		{"a choice by id", region, "eu", "eu", true},
		{"no such choice is passed on", region, "mars", "mars", true},
		{"several choices", checks, "1, load,x", []any{"smoke", "load", "x"}, true},
		{"a required multi-select left empty", checks, "", []any{}, true},
		{"an optional field left empty", region, "", nil, false},
		{"text keeps its spaces", service, " a b ", " a b ", true},
		{"a secret never takes its default", password, "", nil, false},
		{"a redacted default is not a value", contact, "", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, given := Parse(tc.field, tc.line)
			if given != tc.wantGiven {
				t.Fatalf("given %v; want %v", given, tc.wantGiven)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRulesSpeakForTheBridge checks values with the bridge's own wording.
func TestRulesSpeakForTheBridge(t *testing.T) {
	tests := []struct {
		name  string
		field aep.FieldSpec
		value any
		given bool
		want  string
	}{
		{"required and missing", service, nil, false, `field "service": required: a value is required`},
		{"too short", service, "a", true, `field "service": minLength: must be at least 2 characters`},
		{"pattern", service, "Ab", true, `field "service": pattern: does not match the required pattern`},
		{"fine text", service, "checkout", true, ""},
		{"above the maximum", replicas, json.Number("30"), true, `field "replicas": maximum: must be at most 10`},
		{"not a number", replicas, json.Number("x"), true, `field "replicas": type: must be written as a JSON number`},
		{"not a choice", region, "mars", true, `field "region": enum: must be one of the listed choices`},
		{"too many", checks, []any{"smoke", "load", "sec"}, true, `field "checks": maxItems: select at most 2`},
		{"not an email", contact, "nobody", true, `field "contact": format: must be a valid email address`},
		{"optional and missing", region, nil, false, ""},
		{"not a whole number", whole, json.Number("2.5"), true, `field "whole": type: must be an integer`},
		{"at the exclusive bound", whole, json.Number("0"), true, `field "whole": exclusiveMinimum: must be greater than 0`},
		{"off the step", whole, json.Number("3"), true, `field "whole": multipleOf: must be a multiple of 2`},
		{"a fine whole number", whole, json.Number("4"), true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewRules(tc.field).Check(tc.value, tc.given); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		field aep.FieldSpec
		want  []string
	}{
		{service, []string{"text, at least 2 characters, matching the pattern ^[a-z]+$"}},
		{replicas, []string{"a number, at least 1, at most 10", "default: 2 (press Enter to take it)"}},
		{canary, []string{"yes or no", "default: yes (press Enter to take it)"}},
		{checks, []string{"choose any: numbers or ids, separated by commas, at most 2", "  1) Smoke [smoke]", "  2) Load [load]", "  3) Security [sec]"}},
		{contact, []string{"text, format email", "default: hidden by redaction on the bus; type the value"}},
		{whole, []string{"a whole number, greater than 0, a multiple of 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.field.ID, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Describe(tc.field)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestFillDefaults fills what the answer leaves out, as the prompt offers
// it: never over a given value, a secret, or a redacted default.
func TestFillDefaults(t *testing.T) {
	fields := []aep.FieldSpec{service, replicas, canary, region, password, contact}
	values := map[string]any{"service": "checkout", "canary": false}
	filled := FillDefaults(fields, values)
	var ids []string
	for _, f := range filled {
		ids = append(ids, f.ID+"="+DefaultText(f))
	}
	if diff := cmp.Diff([]string{"replicas=2"}, ids); diff != "" {
		t.Errorf("filled (-want +got):\n%s", diff)
	}
	want := map[string]any{"service": "checkout", "canary": false, "replicas": json.Number("2")}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

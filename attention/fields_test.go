package attention

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// constraintsForm has every extension member, content with a credential
// and PII in it, and a secret field with a default.
func constraintsForm(t *testing.T) *translate.Form {
	t.Helper()
	f, err := translate.Parse("Sign in", json.RawMessage(`{"type":"object","properties":{
		"user":{"type":"string","title":"User","description":"Mail ops@example.com if unsure","default":"ops@example.com","format":"email","minLength":3},
		"password":{"type":"string","description":"At least 8 characters","default":"hunter22","minLength":8},
		"replicas":{"type":"integer","minimum":1,"exclusiveMaximum":10,"default":2,"description":"How many"},
		"checks":{"type":"array","items":{"enum":["smoke","load"]},"minItems":1,"default":["smoke"]}
	},"required":["user","password"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func intp(n int) *int { return &n }

// TestFormRequestGatesConstraints: structural constraints at every level;
// description and default at redacted through §9.4, verbatim at full,
// absent at metadata; a secret field's default at no level.
func TestFormRequestGatesConstraints(t *testing.T) {
	choices := []aep.Choice{{ID: "smoke", Label: "smoke"}, {ID: "load", Label: "load"}}
	metadata := []aep.FieldSpec{
		{ID: "user", Type: "string", Label: "user", Required: true, Format: "email", MinLength: intp(3)},
		{ID: "password", Type: "string", Label: "password", Required: true, MinLength: intp(8), Secret: true},
		{ID: "replicas", Type: "number", Label: "replicas", Min: "1", Integer: true, ExclusiveMax: "10"},
		{ID: "checks", Type: "select", Label: "checks", Multi: true, MinItems: intp(1), Choices: choices},
	}
	withContent := func(userDesc, userDefault string) []aep.FieldSpec {
		out := append([]aep.FieldSpec(nil), metadata...)
		out[0].Label, out[0].Description, out[0].Default = "User", userDesc, userDefault
		out[1].Description = "At least 8 characters"
		out[2].Description, out[2].Default = "How many", json.Number("2")
		out[3].Default = []any{"smoke"}
		return out
	}
	tests := []struct {
		name    string
		ceiling aep.Capture
		want    []aep.FieldSpec
	}{
		{"metadata", aep.CaptureMetadata, metadata},
		{"redacted", aep.CaptureRedacted, withContent("Mail [REDACTED:pii] if unsure", "[REDACTED:pii]")},
		{"full", aep.CaptureFull, withContent("Mail ops@example.com if unsure", "ops@example.com")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := FormRequest(constraintsForm(t), RequestOptions{Agent: "b", Ceiling: tt.ceiling})
			if diff := cmp.Diff(tt.want, d.Fields); diff != "" {
				t.Fatalf("fields (-want +got):\n%s", diff)
			}
			b, _ := json.Marshal(d)
			if strings.Contains(string(b), "hunter22") {
				t.Fatalf("the secret field's default is published: %s", b)
			}
			// The event validates at its own level.
			ev := aep.Event{AEP: aep.Version, ID: "x", Type: "attention.requested", Time: "2026-01-01T00:00:00Z",
				Source: "aep://h/agent/b/session/s", Agent: "b", Session: "s", Seq: aep.Int64(0), Capture: tt.ceiling, Data: b}
			if err := ev.Validate(); err != nil {
				t.Fatalf("invalid at %s: %v", tt.ceiling, err)
			}
		})
	}
}

// TestDownlevelDropsContentMembers: a hop that down-levels a redacted
// question to metadata drops description and default, as the bridge does
// itself at metadata.
func TestDownlevelDropsContentMembers(t *testing.T) {
	d, _ := FormRequest(constraintsForm(t), RequestOptions{Agent: "b", Ceiling: aep.CaptureRedacted})
	b, _ := json.Marshal(d)
	ev := aep.Event{AEP: aep.Version, ID: "x", Type: "attention.requested", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/b/session/s", Agent: "b", Session: "s", Seq: aep.Int64(0), Capture: aep.CaptureRedacted, Data: b}
	if err := ev.SetExtension(aep.ExtIntegerFields, aep.IntegerFieldsValue(d.Fields)); err != nil {
		t.Fatal(err)
	}
	down, err := aep.Downlevel(ev, aep.CaptureMetadata)
	if err != nil {
		t.Fatal(err)
	}
	var got aep.AttentionRequested
	if err := json.Unmarshal(down.Data, &got); err != nil {
		t.Fatal(err)
	}
	// Integer-ness travels in the envelope, which the hop keeps.
	if err := aep.MarkIntegerFields(down.Extensions[aep.ExtIntegerFields], got.Fields); err != nil {
		t.Fatal(err)
	}
	own, _ := FormRequest(constraintsForm(t), RequestOptions{Agent: "b", Ceiling: aep.CaptureMetadata})
	if diff := cmp.Diff(own.Fields, got.Fields); diff != "" {
		t.Fatalf("down-leveled fields differ from the bridge's own metadata fields (-own +hop):\n%s", diff)
	}
	if err := down.Validate(); err != nil {
		t.Fatal(err)
	}
}

package attention

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/corpus"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

func TestCaptureGatingCorpus(t *testing.T) {
	var file struct {
		Cases []struct {
			Name    string          `json:"name"`
			Fields  []aep.FieldSpec `json:"fields"`
			Values  map[string]any  `json:"values"`
			Ceiling string          `json:"ceiling"`
			Expect  map[string]any  `json:"expect"`
		} `json:"cases"`
	}
	corpus.LoadJSON(t, "capture-gating/cases.json", &file)
	passed := 0
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ceiling, err := aep.ParseCapture(c.Ceiling)
			if err != nil {
				t.Fatal(err)
			}
			got := GateValues(c.Fields, c.Values, ceiling, nil)
			if !reflect.DeepEqual(normalize(t, got), normalize(t, c.Expect)) {
				t.Fatalf("got %v; want %v", got, c.Expect)
			}
			passed++
		})
	}
	t.Logf("capture-gating %d/%d", passed, len(file.Cases))
}

// pin is the MCP → kind:"form" mapping pinned by the corpus.
type pin struct {
	Input struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	} `json:"input"`
	ExpectedData         json.RawMessage `json:"expected_data"`
	ExpectedDataMetadata json.RawMessage `json:"expected_data_metadata"`
}

func loadPin(t *testing.T) pin {
	t.Helper()
	var file struct {
		Elicitation pin `json:"elicitation"`
	}
	corpus.LoadJSON(t, "mappings/claude-code.json", &file)
	return file.Elicitation
}

func TestPinnedElicitationMapping(t *testing.T) {
	p := loadPin(t)
	form, err := translate.Parse(p.Input.Message, p.Input.RequestedSchema)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		name    string
		ceiling aep.Capture
		want    json.RawMessage
	}{
		{"redacted", aep.CaptureRedacted, p.ExpectedData},
		{"full", aep.CaptureFull, p.ExpectedData},
		{"metadata", aep.CaptureMetadata, p.ExpectedDataMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The pin was written by an adapter whose agent is claude-code;
			// with that name the output must be identical.
			d, capture := FormRequest(form, RequestOptions{Agent: "claude-code", Ceiling: tt.ceiling, RespondVia: []string{"control"}})
			if capture != tt.ceiling {
				t.Errorf("capture: got %s; want %s", capture, tt.ceiling)
			}
			got, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(t, got), normalize(t, tt.want)) {
				t.Fatalf("data:\n got %s\nwant %s", got, tt.want)
			}
			// With the bridge's own agent name only the synthesized
			// prompt may differ.
			own, _ := FormRequest(form, RequestOptions{Agent: "aep-mcp-bridge", Ceiling: tt.ceiling, RespondVia: []string{"control"}})
			var wantObj map[string]any
			if err := json.Unmarshal(tt.want, &wantObj); err != nil {
				t.Fatal(err)
			}
			ownJSON, _ := json.Marshal(own)
			ownObj := normalize(t, ownJSON).(map[string]any)
			if tt.ceiling == aep.CaptureMetadata {
				if ownObj["prompt"] != "aep-mcp-bridge requests input (4 fields)" {
					t.Errorf("own prompt: got %v", ownObj["prompt"])
				}
				delete(ownObj, "prompt")
				delete(wantObj, "prompt")
			}
			if !reflect.DeepEqual(ownObj, normalize(t, mustJSON(t, wantObj))) {
				t.Errorf("with the bridge's agent name:\n got %v\nwant %v", ownObj, wantObj)
			}
		})
	}
}

func TestFormRequestRedactsAtRedacted(t *testing.T) {
	form, err := translate.Parse("Deploy with token=abc123secret to /home/alice/app?", json.RawMessage(
		`{"type":"object","properties":{"k":{"type":"string","title":"Mail ops@example.com"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := FormRequest(form, RequestOptions{Ceiling: aep.CaptureRedacted})
	if want := "Deploy with token=[REDACTED:secret] to ~/app?"; d.Prompt != want {
		t.Errorf("prompt: got %q; want %q", d.Prompt, want)
	}
	if want := "Mail [REDACTED:pii]"; d.Fields[0].Label != want {
		t.Errorf("label: got %q; want %q", d.Fields[0].Label, want)
	}
	d, _ = FormRequest(form, RequestOptions{Ceiling: aep.CaptureFull})
	if d.Prompt != form.Message {
		t.Errorf("full keeps the server's text: got %q", d.Prompt)
	}
	if d, c := FormRequest(form, RequestOptions{Ceiling: aep.CaptureNone}); d != nil || c != aep.CaptureNone {
		t.Errorf("none: got %v, %s; want no data", d, c)
	}
}

func TestGateAnswer(t *testing.T) {
	fields := []aep.FieldSpec{{ID: "name", Type: "string"}, {ID: "n", Type: "number"}}
	a := aep.Answer{Text: "mail bob@example.com", Values: map[string]any{"name": "x", "n": json.Number("3")}}
	tests := []struct {
		name    string
		ceiling aep.Capture
		want    aep.Answer
	}{
		{"metadata drops text", aep.CaptureMetadata, aep.Answer{Values: map[string]any{"n": json.Number("3")}}},
		{"redacted redacts text", aep.CaptureRedacted, aep.Answer{Text: "mail [REDACTED:pii]", Values: map[string]any{"name": "x", "n": json.Number("3")}}},
		{"full keeps text", aep.CaptureFull, aep.Answer{Text: "mail bob@example.com", Values: map[string]any{"name": "x", "n": json.Number("3")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GateAnswer(fields, a, tt.ceiling, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// normalize round-trips v through JSON so values compare by content.
func normalize(t *testing.T, v any) any {
	t.Helper()
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		b = mustJSON(t, v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGateAnswerMistypedValues: an answer the form will reject is still
// recorded (in control.attention.respond), so what an operator typed into
// the wrong field, or pasted as an option, is free text at most: gated
// like a string field's value, never copied verbatim below full.
func TestGateAnswerMistypedValues(t *testing.T) {
	fields := []aep.FieldSpec{{ID: "replicas", Type: "number"}, {ID: "ok", Type: "boolean"}}
	a := aep.Answer{Option: "hunter2-pasted", Values: map[string]any{
		"replicas": "hunter2-typed", "ok": map[string]any{"k": "hunter2-nested"}}}
	for _, tc := range []struct {
		ceiling aep.Capture
		want    aep.Answer
	}{
		{aep.CaptureMetadata, aep.Answer{Values: map[string]any{}}},
		{aep.CaptureRedacted, aep.Answer{Values: map[string]any{"replicas": defaultRedactor.Text("hunter2-typed")}}},
		{aep.CaptureFull, aep.Answer{Values: map[string]any{"replicas": "hunter2-typed"}}},
	} {
		if got := GateAnswer(fields, a, tc.ceiling, nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("at %v: got %+v; want %+v", tc.ceiling, got, tc.want)
		}
	}
	for _, opt := range []string{"accept", "decline", "cancel"} {
		if got := GateAnswer(fields, aep.Answer{Option: opt}, aep.CaptureMetadata, nil); got.Option != opt {
			t.Errorf("option %q recorded as %q; want it kept", opt, got.Option)
		}
	}
}

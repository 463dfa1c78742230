package attention

import (
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// RequestOptions describe how a form question is published.
type RequestOptions struct {
	// Agent is the bridge's AEP agent name, used in synthesized prompts.
	Agent string
	// Ceiling is the capture ceiling for attention.* events. Zero means
	// metadata.
	Ceiling aep.Capture
	// Redactor applies the AEP-0003 §9.4 pipeline at the redacted level.
	// Nil means the default pipeline.
	Redactor *aep.Redactor
	// ExpiresAt is the RFC 3339 deadline of the question, or "".
	ExpiresAt string
	// RespondVia lists the answer channels ("control", "oob").
	RespondVia []string
}

func (o RequestOptions) redactor() *aep.Redactor {
	if o.Redactor != nil {
		return o.Redactor
	}
	return defaultRedactor
}

var defaultRedactor = aep.NewRedactor(aep.RedactOptions{})

// FormRequest builds the data of attention.requested(kind:"form") for a
// parsed elicitation, gated for the ceiling, and the capture level the event
// must declare.
//   - At full, the prompt and labels are the server's text verbatim.
//   - At redacted, they pass through the redaction pipeline.
//   - At metadata, labels degrade to ids and the prompt is synthesized from
//     structure only: "{agent} requests input ({n} fields)".
//   - At none, there is no data at all.
func FormRequest(form *translate.Form, o RequestOptions) (*aep.AttentionRequested, aep.Capture) {
	ceiling := o.Ceiling.OrDefault()
	if ceiling == aep.CaptureNone {
		return nil, aep.CaptureNone
	}
	d := &aep.AttentionRequested{
		Kind:       "form",
		Fields:     form.FieldSpecs(),
		ExpiresAt:  o.ExpiresAt,
		RespondVia: o.RespondVia,
	}
	switch ceiling {
	case aep.CaptureFull:
		d.Prompt = form.Message
	case aep.CaptureRedacted:
		r := o.redactor()
		d.Prompt = r.Text(form.Message)
		for i := range d.Fields {
			f := &d.Fields[i]
			f.Label = r.Text(f.Label)
			for j := range f.Choices {
				f.Choices[j].Label = r.Text(f.Choices[j].Label)
			}
			f.Description = r.Text(f.Description)
			if f.Default != nil {
				f.Default = r.Value(f.Default)
			}
		}
	default:
		d.Prompt = MetadataPrompt(o.Agent, len(d.Fields))
		DegradeLabels(d.Fields)
		DropContent(d.Fields)
	}
	return d, ceiling
}

// DropContent removes the content members of field specs that have no
// structural placeholder, the description and the default, for a level
// below redacted (AEP-0003 §9.2).
func DropContent(fields []aep.FieldSpec) {
	for i := range fields {
		fields[i].Description = ""
		fields[i].Default = nil
	}
}

// MetadataPrompt is the structural prompt of a form question at the
// metadata level (AEP-0003 §9.2).
func MetadataPrompt(agent string, fields int) string {
	noun := "fields"
	if fields == 1 {
		noun = "field"
	}
	return fmt.Sprintf("%s requests input (%d %s)", agent, fields, noun)
}

// DegradeLabels replaces every field and choice label with its id, the
// structural placeholder the metadata level requires (AEP-0002 §5.2).
func DegradeLabels(fields []aep.FieldSpec) {
	for i := range fields {
		fields[i].Label = fields[i].ID
		for j := range fields[i].Choices {
			fields[i].Choices[j].Label = fields[i].Choices[j].ID
		}
	}
}

// GateValues returns the part of a form answer's values that the bus may
// carry at the ceiling (AEP-0002 §5.3, AEP-0006):
//   - keys without a matching field_spec are dropped;
//   - a secret field's value, whatever its type, never appears: it is the
//     §9.4 secret placeholder at redacted and full, and absent below, like
//     free text;
//   - string fields and free "other" text on a select are user-authored
//     text: dropped below redacted, redacted at redacted, verbatim at full;
//   - numbers, booleans and closed choice ids are structural and kept;
//     a string in a number or boolean field (a wrong answer, perhaps a
//     pasted secret) is free text, and any other value is dropped.
//
// Dropping the whole data object at ceiling none is the caller's job, as it
// is for every payload (AEP-0001 §8.2).
func GateValues(fields []aep.FieldSpec, values map[string]any, ceiling aep.Capture, r *aep.Redactor) map[string]any {
	if r == nil {
		r = defaultRedactor
	}
	ceiling = ceiling.OrDefault()
	byID := make(map[string]*aep.FieldSpec, len(fields))
	for i := range fields {
		byID[fields[i].ID] = &fields[i]
	}
	out := make(map[string]any, len(values))
	text := func(k, s string) {
		switch {
		case ceiling >= aep.CaptureFull:
			out[k] = s
		case ceiling == aep.CaptureRedacted:
			out[k] = r.Text(s)
		}
	}
	for k, v := range values {
		f, ok := byID[k]
		if !ok {
			continue
		}
		if f.Secret {
			if ceiling >= aep.CaptureRedacted {
				out[k] = aep.RedactedSecret
			}
			continue
		}
		switch f.Type {
		case "string":
			if s, ok := v.(string); ok {
				text(k, s)
			}
		case "select":
			if f.Multi {
				if ids, ok := choiceIDs(f, v); ok {
					out[k] = ids
				}
				continue
			}
			s, ok := v.(string)
			if !ok {
				continue
			}
			if isChoice(f, s) {
				out[k] = s
			} else if f.Other {
				text(k, s)
			}
		default:
			// A number or a boolean is structural; anything else in such
			// a field (an answer the form will reject) is the operator's
			// own text, or nothing the bus needs.
			switch t := v.(type) {
			case string:
				text(k, t)
			case map[string]any, []any, nil:
			default: // json.Number, a bool, or a Go number from a script
				out[k] = v
			}
		}
	}
	return out
}

// answerOptions are the options of every question the bridge asks: a
// form's implicit ones and a URL question's (AEP-0008), and a permission
// request's verdicts.
var answerOptions = map[string]bool{"accept": true, "decline": true, "cancel": true,
	"allow": true, "allow-session": true, "deny": true}

// GateAnswer gates a whole answer object for the ceiling: an option of
// the question (accept, decline, cancel) is structural and any other is
// dropped, text is free text, values follow GateValues.
func GateAnswer(fields []aep.FieldSpec, a aep.Answer, ceiling aep.Capture, r *aep.Redactor) aep.Answer {
	if r == nil {
		r = defaultRedactor
	}
	ceiling = ceiling.OrDefault()
	out := aep.Answer{}
	if answerOptions[a.Option] {
		out.Option = a.Option // any other option is refused, and may be anything an operator pasted
	}
	switch {
	case ceiling >= aep.CaptureFull:
		out.Text = a.Text
	case ceiling == aep.CaptureRedacted:
		out.Text = r.Text(a.Text)
	}
	if a.Values != nil {
		out.Values = GateValues(fields, a.Values, ceiling, r)
	}
	return out
}

func isChoice(f *aep.FieldSpec, s string) bool {
	for _, c := range f.Choices {
		if c.ID == s {
			return true
		}
	}
	return false
}

// choiceIDs returns v as a list of choice ids when every item is one.
func choiceIDs(f *aep.FieldSpec, v any) ([]any, bool) {
	var items []any
	switch t := v.(type) {
	case []any:
		items = t
	case []string:
		for _, s := range t {
			items = append(items, s)
		}
	default:
		return nil, false
	}
	for _, it := range items {
		s, ok := it.(string)
		if !ok || !isChoice(f, s) {
			return nil, false
		}
	}
	return append([]any{}, items...), true
}

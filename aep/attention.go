package aep

import (
	"encoding/json"
	"fmt"
)

// Choice is one choice of a select field, or one option of a request
// (AEP-0002 §5.2, §5.3).
type Choice struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// FieldSpec is one typed field of a kind:"form" attention request
// (AEP-0002 §5.2 field_spec, AEP-0006). Required, Multi and Other are always
// written when true; Required is also written when false, as the pinned
// mapping does. Min and Max keep the schema's numbers exactly as written.
//
// The members after Max carry the rest of an MCP requestedSchema property,
// so operators answer right the first time. They are extension members,
// which AEP consumers tolerate (AEP-0001 §6), written only when the schema
// has them, under the JSON Schema keyword's own name:
//   - Format, Pattern, MinLength/MaxLength, MinItems/MaxItems,
//     ExclusiveMin/ExclusiveMax and MultipleOf are structural, present at
//     metadata;
//   - Description and Default are content: present at redacted (through
//     the AEP-0003 §9.4 pipeline) and full, absent below;
//   - Secret marks a field whose value never reaches the bus or a log; a
//     secret field never carries its Default.
type FieldSpec struct {
	ID       string      `json:"id"`
	Type     string      `json:"type"`
	Label    string      `json:"label"`
	Required bool        `json:"required"`
	Multi    bool        `json:"multi,omitempty"`
	Other    bool        `json:"other,omitempty"`
	Choices  []Choice    `json:"choices,omitempty"`
	Min      json.Number `json:"min,omitempty"`
	Max      json.Number `json:"max,omitempty"`

	Description string `json:"description,omitempty"`
	Default     any    `json:"default,omitempty"`
	Format      string `json:"format,omitempty"`
	Pattern     string `json:"pattern,omitempty"`
	MinLength   *int   `json:"minLength,omitempty"`
	MaxLength   *int   `json:"maxLength,omitempty"`
	MinItems    *int   `json:"minItems,omitempty"`
	MaxItems    *int   `json:"maxItems,omitempty"`
	Secret      bool   `json:"secret,omitempty"`

	ExclusiveMin json.Number `json:"exclusiveMinimum,omitempty"`
	ExclusiveMax json.Number `json:"exclusiveMaximum,omitempty"`
	MultipleOf   json.Number `json:"multipleOf,omitempty"`

	// Integer marks a number field whose schema type is integer. It is no
	// member of the field spec, which stays the pinned mapping: the event
	// carries it as its ExtIntegerFields attribute, IntegerFieldsValue
	// writes it, and MarkIntegerFields sets it on decoded fields.
	Integer bool `json:"-"`
}

// ExtIntegerFields is the extension attribute (AEP-0001 §5.4) of an
// attention.requested event whose form has integer fields: a JSON string
// holding the JSON array of their ids, such as "[\"replicas\"]". It is
// structural, so it is present at every capture level, and relays keep it
// as they keep every extension attribute.
const ExtIntegerFields = "aepmcpbridgeint"

// IntegerFieldsValue is the ExtIntegerFields value for fields, or "" when
// none is an integer field.
func IntegerFieldsValue(fields []FieldSpec) string {
	var ids []string
	for _, f := range fields {
		if f.Integer {
			ids = append(ids, f.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	b, _ := json.Marshal(ids) // strings always encode
	return string(b)
}

// MarkIntegerFields sets Integer on the fields that the ExtIntegerFields
// attribute of an attention.requested event names (raw is the attribute's
// JSON value; nil or empty means none). A value that is not a JSON string
// holding an array of strings is an error, and marks nothing.
func MarkIntegerFields(raw json.RawMessage, fields []FieldSpec) error {
	if len(raw) == 0 {
		return nil
	}
	var text string
	var ids []string
	if err := json.Unmarshal(raw, &text); err != nil {
		return fmt.Errorf("%s must be a JSON string: %w", ExtIntegerFields, err)
	}
	if err := json.Unmarshal([]byte(text), &ids); err != nil {
		return fmt.Errorf("%s must hold a JSON array of field ids: %w", ExtIntegerFields, err)
	}
	for i := range fields {
		for _, id := range ids {
			if fields[i].ID == id {
				fields[i].Integer = true
			}
		}
	}
	return nil
}

// AttentionRequested is the data of attention.requested (AEP-0002 §5.3).
type AttentionRequested struct {
	Kind       string          `json:"kind"`
	Prompt     string          `json:"prompt"`
	Options    []Choice        `json:"options,omitempty"`
	Fields     []FieldSpec     `json:"fields,omitempty"`
	ExpiresAt  string          `json:"expires_at,omitempty"`
	RespondVia []string        `json:"respond_via,omitempty"`
	Context    json.RawMessage `json:"context,omitempty"`
}

// Answer is the answer object of attention.answered and
// control.attention.respond (AEP-0002 §5.3, AEP-0004 §5). Values holds
// decoded JSON (numbers as json.Number when decoded with UseNumber).
type Answer struct {
	Option string         `json:"option,omitempty"`
	Text   string         `json:"text,omitempty"`
	Values map[string]any `json:"values,omitempty"`
}

// AttentionAnswered is the data of attention.answered.
type AttentionAnswered struct {
	Answer Answer `json:"answer"`
	By     string `json:"by,omitempty"`
	Via    string `json:"via,omitempty"`
}

// AttentionResolved is the data of attention.resolved.
type AttentionResolved struct {
	Resolution string `json:"resolution"`
	LatencyMS  *int64 `json:"latency_ms,omitempty"`
}

// AttentionTimeout is the data of attention.timeout.
type AttentionTimeout struct {
	AfterMS int64 `json:"after_ms"`
}

// Respond is the data of control.attention.respond.
type Respond struct {
	Answer Answer `json:"answer"`
}

// Rejected is the data of control.rejected (AEP-0004 §3).
type Rejected struct {
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Nack reasons of control.rejected (AEP-0004 §3).
const (
	ReasonUnsupported  = "unsupported"
	ReasonUnauthorized = "unauthorized"
	ReasonBusy         = "busy"
	ReasonRefused      = "refused"
	ReasonInvalid      = "invalid"
)

// Resolutions of attention.resolved.
const (
	ResolutionAnswered  = "answered"
	ResolutionAuto      = "auto"
	ResolutionDismissed = "dismissed"
)

package translate

import (
	"bytes"
	"encoding/json"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// FieldSpecs projects the form onto AEP field_spec entries with their
// content (AEP-0002 §5.2), in the order the schema declares its
// properties: field ids are property keys and choice ids enum values, so
// answers map back verbatim; labels are the schema's title, enumNames or
// oneOf/anyOf titles, falling back to the key or value. MCP enums are
// closed, so Other is never set.
//
// Each spec also carries the property's other constraints as extension
// members (see aep.FieldSpec): bounds exactly as written (exclusive ones
// and multipleOf too), integer-ness (Integer, which the event carries in
// its envelope: aep.ExtIntegerFields), format, pattern, lengths, item
// counts, the description, the default when it fits the field, and Secret. A secret field never carries its default. Labels,
// description and default are content here; the attention gating core
// degrades, redacts or drops them for a capture ceiling.
func (f *Form) FieldSpecs() []aep.FieldSpec {
	out := make([]aep.FieldSpec, 0, len(f.Fields))
	for _, fld := range f.Fields {
		spec := aep.FieldSpec{ID: fld.ID, Label: fld.Title, Required: fld.Required,
			Description: fld.Description, Format: fld.Format, Secret: fld.Secret}
		if spec.Label == "" {
			spec.Label = fld.ID
		}
		if !fld.Secret {
			spec.Default = fld.defaultValue()
		}
		switch fld.Kind {
		case KindString:
			spec.Type = "string"
			spec.MinLength, spec.MaxLength = fld.MinLength, fld.MaxLength
			if fld.Pattern != nil {
				spec.Pattern = fld.Pattern.String()
			}
		case KindNumber, KindInteger:
			spec.Type = "number"
			if fld.Minimum != nil {
				spec.Min = fld.Minimum.Text
			}
			if fld.Maximum != nil {
				spec.Max = fld.Maximum.Text
			}
			spec.Integer = fld.Kind == KindInteger
			if fld.ExclusiveMinimum != nil {
				spec.ExclusiveMin = fld.ExclusiveMinimum.Text
			}
			if fld.ExclusiveMaximum != nil {
				spec.ExclusiveMax = fld.ExclusiveMaximum.Text
			}
			if fld.MultipleOf != nil {
				spec.MultipleOf = fld.MultipleOf.Text
			}
		case KindBoolean:
			spec.Type = "boolean"
		case KindSelect, KindMultiSelect:
			spec.Type = "select"
			spec.Multi = fld.Kind == KindMultiSelect
			spec.MinItems, spec.MaxItems = fld.MinItems, fld.MaxItems
			for _, c := range fld.Choices {
				label := c.Title
				if label == "" {
					label = c.ID
				}
				spec.Choices = append(spec.Choices, aep.Choice{ID: c.ID, Label: label})
			}
		}
		out = append(out, spec)
	}
	return out
}

// defaultValue decodes the schema's default for a field spec when its JSON
// type fits the field (a string, a number, a boolean, a choice id, a list
// of choice ids), so a consumer can pre-fill it; any other default is left
// out, and numbers stay exact. It does not check the default against the
// schema's other constraints: answers are validated whatever the form was
// pre-filled with.
func (fld *Field) defaultValue() any {
	if fld.Default == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(fld.Default))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	fits := false
	switch t := v.(type) {
	case string:
		fits = fld.Kind == KindString || (fld.Kind == KindSelect && fld.hasChoice(t))
	case json.Number:
		_, problem := exactNumber(t)
		fits = (fld.Kind == KindNumber || fld.Kind == KindInteger) && problem == ""
	case bool:
		fits = fld.Kind == KindBoolean
	case []any:
		items, ok := stringItems(t)
		fits = fld.Kind == KindMultiSelect && ok
		for _, it := range items {
			fits = fits && fld.hasChoice(it)
		}
	}
	if !fits {
		return nil
	}
	return v
}

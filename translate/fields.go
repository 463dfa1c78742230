package translate

import "github.com/agenteventprotocol/aep-mcp-bridge/aep"

// FieldSpecs projects the form onto AEP field_spec entries with their
// content labels (AEP-0002 §5.2): field ids are property keys and choice ids
// enum values, so answers map back verbatim; labels are the schema's title,
// enumNames or oneOf/anyOf titles, falling back to the key or value. MCP
// enums are closed, so Other is never set. Labels here are content; the
// attention gating core degrades or redacts them for a capture ceiling.
func (f *Form) FieldSpecs() []aep.FieldSpec {
	out := make([]aep.FieldSpec, 0, len(f.Fields))
	for _, fld := range f.Fields {
		spec := aep.FieldSpec{ID: fld.ID, Label: fld.Title, Required: fld.Required}
		if spec.Label == "" {
			spec.Label = fld.ID
		}
		switch fld.Kind {
		case KindString:
			spec.Type = "string"
		case KindNumber, KindInteger:
			spec.Type = "number"
			if fld.Minimum != nil {
				spec.Min = fld.Minimum.Text
			}
			if fld.Maximum != nil {
				spec.Max = fld.Maximum.Text
			}
		case KindBoolean:
			spec.Type = "boolean"
		case KindSelect, KindMultiSelect:
			spec.Type = "select"
			spec.Multi = fld.Kind == KindMultiSelect
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

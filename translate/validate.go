package translate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// InvalidAnswer reports an answer that breaks the form's contract. Field is
// the property key ("" for the answer as a whole), Rule the violated schema
// keyword or AEP rule, and Reason a sentence about it. The message never
// quotes the answer's own text, so it can be used verbatim as the detail of
// a control.rejected nack and logged safely.
type InvalidAnswer struct {
	Field  string
	Rule   string
	Reason string
}

func (e *InvalidAnswer) Error() string {
	switch {
	case e.Field == "" && e.Rule == "answer":
		return "answer: " + e.Reason // the rule names the answer itself: say it once
	case e.Field == "":
		return fmt.Sprintf("answer: %s: %s", e.Rule, e.Reason)
	}
	return fmt.Sprintf("field %q: %s: %s", e.Field, e.Rule, e.Reason)
}

// fieldList names the form's field ids, for a detail: the first ten, in
// declared order.
func (f *Form) fieldList() string {
	ids := make([]string, 0, min(len(f.Fields), 10))
	for i, fld := range f.Fields {
		if i == 10 {
			ids = append(ids, fmt.Sprintf("and %d more", len(f.Fields)-10))
			break
		}
		ids = append(ids, strconv.Quote(fld.ID))
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Validate checks values against the full original schema: unknown keys,
// required fields, types, integer-ness, bounds, lengths, formats, patterns,
// enum membership and item counts. It then applies the AEP form rule
// (AEP-0002 §5.3: reject values that miss a required field or carry a
// non-choice string for a closed select). Numbers may be json.Number,
// float64 or any Go integer. The first violation, in field order, is
// returned as an *InvalidAnswer.
func (f *Form) Validate(values map[string]any) error {
	unknown := 0
	for k := range values {
		if _, ok := f.byID[k]; !ok {
			unknown++
		}
	}
	if unknown > 0 {
		// The detail names the form's own fields, never the answer's keys:
		// they are the operator's text, and details are recorded as built.
		return &InvalidAnswer{Rule: "properties", Reason: fmt.Sprintf("%d value(s) name no field of this form; its fields are %s",
			unknown, f.fieldList())}
	}
	for i := range f.Fields {
		fld := &f.Fields[i]
		v, ok := values[fld.ID]
		if !ok {
			if fld.Required {
				return &InvalidAnswer{Field: fld.ID, Rule: "required", Reason: "a value is required"}
			}
			continue
		}
		if err := fld.check(v); err != nil {
			return err
		}
	}
	return checkFormRule(f.FieldSpecs(), values)
}

// checkFormRule is the AEP-0002 §5.3 MUST-reject rule, stated on field_spec
// alone, independently of the schema checks above.
func checkFormRule(specs []aep.FieldSpec, values map[string]any) error {
	for _, s := range specs {
		v, ok := values[s.ID]
		if !ok {
			if s.Required {
				return &InvalidAnswer{Field: s.ID, Rule: "AEP-0002 §5.3", Reason: "required fields must be answered"}
			}
			continue
		}
		if s.Type != "select" || s.Other {
			continue
		}
		ids := map[string]bool{}
		for _, c := range s.Choices {
			ids[c.ID] = true
		}
		var strs []any
		if s.Multi {
			strs, _ = v.([]any)
			if ss, ok := v.([]string); ok {
				for _, x := range ss {
					strs = append(strs, x)
				}
			}
		} else {
			strs = []any{v}
		}
		for _, x := range strs {
			if str, ok := x.(string); ok && !ids[str] {
				return &InvalidAnswer{Field: s.ID, Rule: "AEP-0002 §5.3", Reason: "a closed select takes only one of its choice ids"}
			}
		}
	}
	return nil
}

func (fld *Field) invalid(rule, reason string) error {
	return &InvalidAnswer{Field: fld.ID, Rule: rule, Reason: reason}
}

func (fld *Field) check(v any) error {
	switch fld.Kind {
	case KindString:
		s, ok := v.(string)
		if !ok {
			return fld.invalid("type", "must be a string, not "+jsonTypeName(v))
		}
		n := utf8.RuneCountInString(s)
		if fld.MinLength != nil && n < *fld.MinLength {
			return fld.invalid("minLength", fmt.Sprintf("must be at least %d characters", *fld.MinLength))
		}
		if fld.MaxLength != nil && n > *fld.MaxLength {
			return fld.invalid("maxLength", fmt.Sprintf("must be at most %d characters", *fld.MaxLength))
		}
		if fld.Format != "" && !validFormat(fld.Format, s) {
			return fld.invalid("format", "must be a valid "+formatNoun(fld.Format))
		}
		if fld.Pattern != nil && !fld.Pattern.MatchString(s) {
			return fld.invalid("pattern", "does not match the required pattern")
		}
	case KindNumber, KindInteger:
		return fld.checkNumber(v)
	case KindBoolean:
		if _, ok := v.(bool); !ok {
			return fld.invalid("type", "must be a boolean, not "+jsonTypeName(v))
		}
	case KindSelect:
		s, ok := v.(string)
		if !ok {
			return fld.invalid("type", "must be one choice id (a string), not "+jsonTypeName(v))
		}
		if !fld.hasChoice(s) {
			return fld.invalid("enum", "must be one of the listed choices")
		}
	case KindMultiSelect:
		items, ok := stringItems(v)
		if !ok {
			return fld.invalid("type", "must be an array of choice ids")
		}
		seen := map[string]bool{}
		for _, s := range items {
			if !fld.hasChoice(s) {
				return fld.invalid("enum", "every item must be one of the listed choices")
			}
			if seen[s] {
				return fld.invalid("uniqueItems", "a choice may be selected only once")
			}
			seen[s] = true
		}
		if fld.MinItems != nil && len(items) < *fld.MinItems {
			return fld.invalid("minItems", fmt.Sprintf("select at least %d", *fld.MinItems))
		}
		if fld.MaxItems != nil && len(items) > *fld.MaxItems {
			return fld.invalid("maxItems", fmt.Sprintf("select at most %d", *fld.MaxItems))
		}
	}
	return nil
}

func (fld *Field) hasChoice(s string) bool {
	for _, c := range fld.Choices {
		if c.ID == s {
			return true
		}
	}
	return false
}

// stringItems accepts []any of strings or []string.
func stringItems(v any) ([]string, bool) {
	switch t := v.(type) {
	case []string:
		return t, true
	case []any:
		out := make([]string, len(t))
		for i, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// checkNumber applies the number constraints exactly (JSON Schema
// 2020-12 §6.2): no float64 ever stands between the answer and its bounds.
func (fld *Field) checkNumber(v any) error {
	x, problem := exactNumber(v)
	switch problem {
	case "":
	case notANumber:
		return fld.invalid("type", "must be a number, not "+jsonTypeName(v))
	default:
		return fld.invalid("type", string(problem))
	}
	if fld.Kind == KindInteger && !x.IsInt() {
		return fld.invalid("type", "must be an integer")
	}
	if b := fld.Minimum; b != nil && x.Cmp(*b) < 0 {
		return fld.invalid("minimum", "must be at least "+b.String())
	}
	if b := fld.Maximum; b != nil && x.Cmp(*b) > 0 {
		return fld.invalid("maximum", "must be at most "+b.String())
	}
	if b := fld.ExclusiveMinimum; b != nil && x.Cmp(*b) <= 0 {
		return fld.invalid("exclusiveMinimum", "must be greater than "+b.String())
	}
	if b := fld.ExclusiveMaximum; b != nil && x.Cmp(*b) >= 0 {
		return fld.invalid("exclusiveMaximum", "must be less than "+b.String())
	}
	if b := fld.MultipleOf; b != nil && !x.multipleOf(*b) {
		return fld.invalid("multipleOf", "must be a multiple of "+b.String())
	}
	return nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, float32, int, int64, int32, uint, uint64, uint32:
		return "a number"
	case []any, []string:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func formatNoun(f string) string {
	switch f {
	case "email":
		return "email address"
	case "uri":
		return "absolute URI"
	case "date":
		return "date (YYYY-MM-DD)"
	case "date-time":
		return "RFC 3339 date-time"
	}
	return f
}

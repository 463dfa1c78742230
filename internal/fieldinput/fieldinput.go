package fieldinput

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// Rules checks answers to one field with the bridge's own rules and
// wording: it rebuilds the one-property schema the field spec describes
// and validates with translate, so what the terminal says about an answer
// is what the bridge would say. Integer-ness comes from the event's
// envelope (aep.ExtIntegerFields, set on the spec by the operator client);
// a pattern translate cannot compile is left to the bridge.
type Rules struct {
	spec aep.FieldSpec
	form *translate.Form // nil when the spec names something translate cannot rebuild
}

// NewRules returns the rules of the field s.
func NewRules(s aep.FieldSpec) Rules {
	r := Rules{spec: s}
	schema := map[string]any{"type": "object", "properties": map[string]any{s.ID: specSchema(s)}}
	if s.Required {
		schema["required"] = []string{s.ID}
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return r
	}
	if f, err := translate.Parse("", b); err == nil {
		r.form = f
	}
	return r
}

// specSchema is the JSON Schema of one property as its field spec states it.
func specSchema(s aep.FieldSpec) map[string]any {
	p := map[string]any{}
	setInt := func(k string, v *int) {
		if v != nil {
			p[k] = *v
		}
	}
	switch s.Type {
	case "string":
		p["type"] = "string"
		setInt("minLength", s.MinLength)
		setInt("maxLength", s.MaxLength)
		if s.Format != "" {
			p["format"] = s.Format
		}
		if s.Pattern != "" {
			p["pattern"] = s.Pattern
		}
	case "number":
		p["type"] = "number"
		if s.Integer {
			p["type"] = "integer"
		}
		for k, v := range map[string]json.Number{"minimum": s.Min, "maximum": s.Max,
			"exclusiveMinimum": s.ExclusiveMin, "exclusiveMaximum": s.ExclusiveMax, "multipleOf": s.MultipleOf} {
			if v != "" {
				p[k] = v
			}
		}
	case "boolean":
		p["type"] = "boolean"
	case "select":
		ids := make([]string, len(s.Choices))
		for i, c := range s.Choices {
			ids[i] = c.ID
		}
		if s.Multi {
			p["type"] = "array"
			p["items"] = map[string]any{"type": "string", "enum": ids}
			setInt("minItems", s.MinItems)
			setInt("maxItems", s.MaxItems)
		} else {
			p["type"] = "string"
			p["enum"] = ids
		}
	default:
		p["type"] = s.Type // translate refuses it: no local check
	}
	return p
}

// Check returns the bridge's message for value (given false: no value),
// or "" when the value passes.
func (r Rules) Check(value any, given bool) string {
	if r.form == nil {
		return ""
	}
	values := map[string]any{}
	if given {
		values[r.spec.ID] = value
	}
	if err := r.form.Validate(values); err != nil {
		return err.Error()
	}
	return ""
}

// Describe lists what an operator needs to answer a field right the
// first time: its type, constraints, choices and default. The lines carry
// the peer's text as it is: escape them for the terminal.
func Describe(s aep.FieldSpec) []string {
	var lines []string
	var c []string
	n := func(v *int) string { return fmt.Sprint(*v) }
	switch s.Type {
	case "string":
		kind := "text"
		if s.Format != "" && s.Format != translate.FormatPassword {
			kind = "text, format " + s.Format
		}
		c = append(c, kind)
		switch {
		case s.MinLength != nil && s.MaxLength != nil:
			c = append(c, n(s.MinLength)+" to "+n(s.MaxLength)+" characters")
		case s.MinLength != nil:
			c = append(c, "at least "+n(s.MinLength)+" characters")
		case s.MaxLength != nil:
			c = append(c, "at most "+n(s.MaxLength)+" characters")
		}
		if s.Pattern != "" {
			c = append(c, "matching the pattern "+s.Pattern)
		}
	case "number":
		if s.Integer {
			c = append(c, "a whole number")
		} else {
			c = append(c, "a number")
		}
		if s.Min != "" {
			c = append(c, "at least "+string(s.Min))
		}
		if s.Max != "" {
			c = append(c, "at most "+string(s.Max))
		}
		if s.ExclusiveMin != "" {
			c = append(c, "greater than "+string(s.ExclusiveMin))
		}
		if s.ExclusiveMax != "" {
			c = append(c, "less than "+string(s.ExclusiveMax))
		}
		if s.MultipleOf != "" {
			c = append(c, "a multiple of "+string(s.MultipleOf))
		}
	case "boolean":
		c = append(c, "yes or no")
	case "select":
		if s.Multi {
			c = append(c, "choose any: numbers or ids, separated by commas")
			if s.MinItems != nil {
				c = append(c, "at least "+n(s.MinItems))
			}
			if s.MaxItems != nil {
				c = append(c, "at most "+n(s.MaxItems))
			}
		} else {
			c = append(c, "choose one: its number or id")
		}
	default:
		c = append(c, "type "+s.Type)
	}
	if s.Secret {
		c = append(c, "secret: not shown as you type")
	}
	lines = append(lines, strings.Join(c, ", "))
	for i, ch := range s.Choices {
		lines = append(lines, fmt.Sprintf("  %d) %s [%s]", i+1, ch.Label, ch.ID))
	}
	switch {
	case s.Default != nil && redactedDefault(s):
		lines = append(lines, "default: hidden by redaction on the bus; type the value")
	case s.Default != nil:
		lines = append(lines, "default: "+DefaultText(s)+" (press Enter to take it)")
	}
	return lines
}

// FillDefaults adds to values the declared default of every field that
// values leaves out, as the inbox and the field-by-field prompt offer
// them: never a secret field's, nor a default the bus shows redacted
// (it is not the server's value). It returns the fields it filled, in
// declared order.
func FillDefaults(fields []aep.FieldSpec, values map[string]any) []aep.FieldSpec {
	var filled []aep.FieldSpec
	for _, f := range fields {
		if _, ok := values[f.ID]; ok || f.Default == nil || f.Secret || redactedDefault(f) {
			continue
		}
		values[f.ID] = defaultValue(f.Default)
		filled = append(filled, f)
	}
	return filled
}

// redactedDefault reports a default the bus shows redacted (an email at
// the redacted capture level): it is not the server's value, so it is
// never taken as the answer.
func redactedDefault(s aep.FieldSpec) bool {
	str, ok := s.Default.(string)
	return ok && strings.Contains(str, "[REDACTED:")
}

// DefaultText shows a field's default as an operator would type it.
func DefaultText(s aep.FieldSpec) string {
	switch v := s.Default.(type) {
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(s.Default)
}

// Parse reads a typed line as a field's value. An empty line takes
// the default, or gives no value (a required multi-select gets the empty
// list, which is a value). What cannot be read as the field's type is
// passed on as typed, so the bridge's rules name the problem.
func Parse(f aep.FieldSpec, s string) (any, bool) {
	trimmed := strings.TrimSpace(s)
	if trimmed == "" {
		switch {
		case f.Default != nil && !f.Secret && !redactedDefault(f):
			return defaultValue(f.Default), true
		case f.Type == "select" && f.Multi && f.Required:
			return []any{}, true
		}
		return nil, false
	}
	switch f.Type {
	case "number":
		return json.Number(trimmed), true
	case "boolean":
		switch strings.ToLower(trimmed) {
		case "y", "yes", "true":
			return true, true
		case "n", "no", "false":
			return false, true
		}
		return trimmed, true
	case "select":
		if !f.Multi {
			if id, ok := PickChoice(trimmed, f.Choices); ok {
				return id, true
			}
			return trimmed, true
		}
		var ids []any
		for _, part := range strings.Split(trimmed, ",") {
			part = strings.TrimSpace(part)
			if id, ok := PickChoice(part, f.Choices); ok {
				ids = append(ids, id)
			} else {
				ids = append(ids, part)
			}
		}
		return ids, true
	}
	return s, true
}

// defaultValue turns a default decoded from JSON into an answer value:
// numbers travel as json.Number.
func defaultValue(v any) any {
	if f, ok := v.(float64); ok {
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return v
}

// PickChoice reads a choice by its id or, failing that, its 1-based
// number.
func PickChoice(s string, choices []aep.Choice) (string, bool) {
	for _, c := range choices {
		if c.ID == s {
			return c.ID, true
		}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(choices) {
		return choices[n-1].ID, true
	}
	return "", false
}

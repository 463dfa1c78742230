package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Kind is the kind of value a form field takes.
type Kind int

// Field kinds. Integer and Number both become field_spec type "number";
// Integer additionally requires integral answers.
const (
	KindString Kind = iota + 1
	KindNumber
	KindInteger
	KindBoolean
	KindSelect
	KindMultiSelect
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindInteger:
		return "integer"
	case KindBoolean:
		return "boolean"
	case KindSelect:
		return "select"
	case KindMultiSelect:
		return "multi-select"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Choice is one allowed value of a select field: ID is the enum value or
// const (sent back verbatim), Title its display label ("" when none).
type Choice struct {
	ID    string
	Title string
}

// Field is one property of a requestedSchema with every constraint the
// schema declares.
type Field struct {
	ID          string
	Kind        Kind
	Title       string
	Description string
	Required    bool
	Choices     []Choice

	// String constraints.
	MinLength, MaxLength *int
	Format               string
	Pattern              *regexp.Regexp

	// Number constraints, kept exactly.
	Minimum, Maximum                   *Number
	ExclusiveMinimum, ExclusiveMaximum *Number
	MultipleOf                         *Number

	// Multi-select constraints.
	MinItems, MaxItems *int
	UniqueItems        bool

	// Default is the schema's default value, as raw JSON, or nil.
	Default json.RawMessage

	// Secret marks a field whose value never reaches the bus or a log
	// (DESIGN decision 10): the schema says so (format "password",
	// writeOnly), or the key or title of a string or number field names a
	// credential (aep.IsCredentialName). Selects and booleans carry
	// server-defined ids and flags, never a credential, so only their
	// schema can make them secret.
	Secret bool
}

// Form is a parsed elicitation: the message and the fields in the order the
// schema lists its properties.
type Form struct {
	Message string
	Fields  []Field
	byID    map[string]int
}

// Field returns the field with the given id.
func (f *Form) Field(id string) (*Field, bool) {
	i, ok := f.byID[id]
	if !ok {
		return nil, false
	}
	return &f.Fields[i], true
}

// UnsupportedError reports a requestedSchema construct the form language
// cannot carry. Path is the JSON path of the offending schema node
// ("properties.address"), Reason says why.
type UnsupportedError struct {
	Path   string
	Reason string
}

func (e *UnsupportedError) Error() string {
	if e.Path == "" {
		return "requestedSchema cannot be shown as a form: " + e.Reason
	}
	return fmt.Sprintf("requestedSchema property %s cannot be shown as a form: %s", e.Path, e.Reason)
}

// MaxFields bounds the number of properties a form may have, so a hostile
// schema cannot make the bridge build an unbounded event.
const MaxFields = 256

// Parse reads an elicitation's message and requestedSchema. The schema must
// be a flat object of primitives as MCP form-mode elicitation restricts it.
func Parse(message string, requestedSchema json.RawMessage) (*Form, error) {
	top, err := objectMembers(requestedSchema)
	if err != nil {
		return nil, &UnsupportedError{Reason: "the schema is not a JSON object"}
	}
	f := &Form{Message: message, byID: map[string]int{}}
	for _, k := range top.keys {
		switch k {
		case "type":
			var t string
			if json.Unmarshal(top.vals[k], &t) != nil || t != "object" {
				return nil, &UnsupportedError{Path: "type", Reason: `the top-level type must be "object"`}
			}
		case "properties", "required":
		case "$schema", "$id", "title", "description", "additionalProperties", "$comment":
			// Annotations; additionalProperties is enforced anyway, since
			// keys outside the schema never reach the server.
		default:
			return nil, &UnsupportedError{Path: k, Reason: fmt.Sprintf("the keyword %q is not part of MCP's restricted elicitation schema", k)}
		}
	}
	props := &members{}
	if raw, ok := top.vals["properties"]; ok {
		props, err = objectMembers(raw)
		if err != nil {
			return nil, &UnsupportedError{Path: "properties", Reason: "properties must be an object"}
		}
	}
	if len(props.keys) > MaxFields {
		return nil, &UnsupportedError{Path: "properties", Reason: fmt.Sprintf("%d properties exceed the limit of %d", len(props.keys), MaxFields)}
	}
	for _, id := range props.keys {
		fld, err := parseField(id, props.vals[id])
		if err != nil {
			return nil, err
		}
		f.byID[id] = len(f.Fields)
		f.Fields = append(f.Fields, *fld)
	}
	if raw, ok := top.vals["required"]; ok {
		var req []string
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, &UnsupportedError{Path: "required", Reason: "required must be an array of property names"}
		}
		for _, r := range req {
			i, ok := f.byID[r]
			if !ok {
				return nil, &UnsupportedError{Path: "required", Reason: fmt.Sprintf("required names %q, which is not a property", r)}
			}
			f.Fields[i].Required = true
		}
	}
	return f, nil
}

// members is a JSON object with its keys in document order.
type members struct {
	keys []string
	vals map[string]json.RawMessage
}

// objectMembers decodes a JSON object keeping key order, which the plain
// map decoding of encoding/json loses. Duplicate keys are refused.
func objectMembers(raw json.RawMessage) (*members, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	m := &members{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := m.vals[k]; dup {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		m.keys = append(m.keys, k)
		m.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return m, nil
}

// parseKind sets the field's kind from its type and reads the keywords of
// that kind. It returns the keywords the property may use.
func parseKind(fld *Field, typ string, m *members, unsupported func(string) error) (map[string]bool, error) {
	allowed := map[string]bool{"type": true}
	switch typ {
	case "string":
		fld.Kind = KindString
		for _, k := range []string{"minLength", "maxLength", "format", "pattern", "enum", "enumNames", "oneOf", "anyOf"} {
			allowed[k] = true
		}
		if err := parseString(fld, m, unsupported); err != nil {
			return nil, err
		}
	case "number", "integer":
		fld.Kind = KindNumber
		if typ == "integer" {
			fld.Kind = KindInteger
		}
		for _, k := range numberKeywords {
			allowed[k] = true
		}
		if err := parseNumberBounds(fld, m, unsupported); err != nil {
			return nil, err
		}
	case "boolean":
		fld.Kind = KindBoolean
	case "array":
		fld.Kind = KindMultiSelect
		for _, k := range []string{"items", "minItems", "maxItems", "uniqueItems"} {
			allowed[k] = true
		}
		if err := parseArray(fld, m, unsupported); err != nil {
			return nil, err
		}
	case "object":
		return nil, unsupported("nested objects are not supported; elicitation schemas are flat")
	case "null":
		return nil, unsupported(`type "null" carries no answer`)
	default:
		return nil, unsupported(fmt.Sprintf("unknown type %q", typ))
	}
	return allowed, nil
}

// annotationKeys are keywords that never constrain a value.
var annotationKeys = map[string]bool{
	"title": true, "description": true, "default": true, "$comment": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

func parseField(id string, raw json.RawMessage) (*Field, error) {
	path := "properties." + id
	unsupported := func(reason string) error { return &UnsupportedError{Path: path, Reason: reason} }
	m, err := objectMembers(raw)
	if err != nil {
		return nil, unsupported("the property schema is not a JSON object")
	}
	if _, ok := m.vals["$ref"]; ok {
		return nil, unsupported("$ref is not supported; elicitation schemas must be inline and flat")
	}
	fld := &Field{ID: id}
	getStr := func(k string) (string, error) {
		raw, ok := m.vals[k]
		if !ok {
			return "", nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", unsupported(k + " must be a string")
		}
		return s, nil
	}
	if fld.Title, err = getStr("title"); err != nil {
		return nil, err
	}
	if fld.Description, err = getStr("description"); err != nil {
		return nil, err
	}
	if d, ok := m.vals["default"]; ok {
		fld.Default = d
	}
	typ, err := getStr("type")
	if err != nil {
		return nil, unsupported("type must be a single type name; union types are not supported")
	}
	if typ == "" {
		if _, ok := m.vals["enum"]; ok {
			typ = "string"
		} else if _, ok := m.vals["oneOf"]; ok {
			typ = "string"
		} else {
			return nil, unsupported("the property has no type")
		}
	}
	allowed, err := parseKind(fld, typ, m, unsupported)
	if err != nil {
		return nil, err
	}
	for _, k := range m.keys {
		if !allowed[k] && !annotationKeys[k] {
			return nil, unsupported(fmt.Sprintf("the keyword %q is not supported for a %s property", k, typ))
		}
	}
	if err := fld.classifySecret(m, unsupported); err != nil {
		return nil, err
	}
	return fld, nil
}

// Formats are the string formats a requestedSchema may use: the four MCP
// elicitation defines, and FormatPassword.
var Formats = []string{"email", "uri", "date", "date-time", FormatPassword}

func parseString(fld *Field, m *members, unsupported func(string) error) error {
	var err error
	if fld.MinLength, err = nonNegInt(m, "minLength", unsupported); err != nil {
		return err
	}
	if fld.MaxLength, err = nonNegInt(m, "maxLength", unsupported); err != nil {
		return err
	}
	if raw, ok := m.vals["format"]; ok {
		if json.Unmarshal(raw, &fld.Format) != nil {
			return unsupported("format must be a string")
		}
		known := false
		for _, f := range Formats {
			known = known || f == fld.Format
		}
		if !known {
			return unsupported(fmt.Sprintf("format %q is not one a form can enforce (%s)", fld.Format, strings.Join(Formats, ", ")))
		}
	}
	if raw, ok := m.vals["pattern"]; ok {
		var p string
		if json.Unmarshal(raw, &p) != nil {
			return unsupported("pattern must be a string")
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return unsupported("pattern is not a regular expression this bridge can enforce")
		}
		fld.Pattern = re
	}
	_, hasEnum := m.vals["enum"]
	_, hasOneOf := m.vals["oneOf"]
	_, hasAnyOf := m.vals["anyOf"]
	switch {
	case hasAnyOf:
		return unsupported("anyOf on a string is not an MCP form construct; use oneOf of const/title")
	case hasEnum && hasOneOf:
		return unsupported("enum and oneOf together are ambiguous")
	case hasEnum:
		cs, err := enumChoices(m, "")
		if err != nil {
			return unsupported(err.Error())
		}
		fld.Choices = cs
	case hasOneOf:
		cs, err := titledChoices(m.vals["oneOf"])
		if err != nil {
			return unsupported("oneOf " + err.Error())
		}
		fld.Choices = cs
	default:
		if _, ok := m.vals["enumNames"]; ok {
			return unsupported("enumNames without enum")
		}
		return nil
	}
	if len(fld.Choices) == 0 {
		return unsupported("an enum needs at least one value")
	}
	if err := uniqueChoices(fld.Choices); err != nil {
		return unsupported(err.Error())
	}
	fld.Kind = KindSelect
	return nil
}

func parseArray(fld *Field, m *members, unsupported func(string) error) error {
	var err error
	if fld.MinItems, err = nonNegInt(m, "minItems", unsupported); err != nil {
		return err
	}
	if fld.MaxItems, err = nonNegInt(m, "maxItems", unsupported); err != nil {
		return err
	}
	if raw, ok := m.vals["uniqueItems"]; ok {
		if json.Unmarshal(raw, &fld.UniqueItems) != nil {
			return unsupported("uniqueItems must be a boolean")
		}
	}
	raw, ok := m.vals["items"]
	if !ok {
		return unsupported("an array needs items listing its choices")
	}
	items, err := objectMembers(raw)
	if err != nil {
		return unsupported("items must be a schema object")
	}
	var itemType string
	if t, ok := items.vals["type"]; ok {
		if json.Unmarshal(t, &itemType) != nil {
			return unsupported("items.type must be a single type name")
		}
	}
	switch itemType {
	case "", "string":
	case "object":
		return unsupported("arrays of objects are not supported; only multi-select arrays of enum strings are")
	default:
		return unsupported(fmt.Sprintf("arrays of %s are not supported; only multi-select arrays of enum strings are", itemType))
	}
	for _, k := range items.keys {
		switch k {
		case "type", "enum", "anyOf", "oneOf", "enumNames":
		default:
			if !annotationKeys[k] {
				return unsupported(fmt.Sprintf("the keyword %q is not supported in items", k))
			}
		}
	}
	switch {
	case items.vals["enum"] != nil:
		cs, err := enumChoices(items, "items.")
		if err != nil {
			return unsupported(err.Error())
		}
		fld.Choices = cs
	case items.vals["anyOf"] != nil || items.vals["oneOf"] != nil:
		raw := items.vals["anyOf"]
		if raw == nil {
			raw = items.vals["oneOf"]
		}
		cs, err := titledChoices(raw)
		if err != nil {
			return unsupported("items.anyOf " + err.Error())
		}
		fld.Choices = cs
	default:
		return unsupported("array items must be an enum of strings (items.enum or items.anyOf of const/title)")
	}
	if len(fld.Choices) == 0 {
		return unsupported("a multi-select needs at least one choice")
	}
	if err := uniqueChoices(fld.Choices); err != nil {
		return unsupported(err.Error())
	}
	if fld.MinItems != nil && fld.MaxItems != nil && *fld.MinItems > *fld.MaxItems {
		return unsupported("minItems is greater than maxItems; no answer could satisfy it")
	}
	return nil
}

func stringList(raw json.RawMessage) ([]string, error) {
	var list []any
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	out := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("value %d is not a string", i)
		}
		out[i] = s
	}
	return out, nil
}

func titledChoices(raw json.RawMessage) ([]Choice, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("must be an array of {const, title} objects")
	}
	out := make([]Choice, 0, len(list))
	for i, item := range list {
		m, err := objectMembers(item)
		if err != nil {
			return nil, fmt.Errorf("entry %d is not an object", i)
		}
		var c Choice
		if json.Unmarshal(m.vals["const"], &c.ID) != nil {
			return nil, fmt.Errorf("entry %d needs a string const", i)
		}
		if t, ok := m.vals["title"]; ok && json.Unmarshal(t, &c.Title) != nil {
			return nil, fmt.Errorf("entry %d has a non-string title", i)
		}
		for _, k := range m.keys {
			if k != "const" && k != "title" && k != "description" && k != "type" {
				return nil, fmt.Errorf("entry %d has the unsupported keyword %q", i, k)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func uniqueChoices(cs []Choice) error {
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.ID] {
			return fmt.Errorf("the choice %q is listed twice", c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

// nonNegInt reads an optional non-negative integer keyword.
func nonNegInt(m *members, k string, unsupported func(string) error) (*int, error) {
	raw, ok := m.vals[k]
	if !ok {
		return nil, nil
	}
	var n int
	if json.Unmarshal(raw, &n) != nil || n < 0 {
		return nil, unsupported(k + " must be a non-negative integer")
	}
	return &n, nil
}

// enumChoices reads enum and the legacy enumNames of a schema node.
func enumChoices(m *members, prefix string) ([]Choice, error) {
	ids, err := stringList(m.vals["enum"])
	if err != nil {
		return nil, fmt.Errorf("%senum must list strings only", prefix)
	}
	var names []string
	if raw, ok := m.vals["enumNames"]; ok {
		names, err = stringList(raw)
		if err != nil || len(names) != len(ids) {
			return nil, fmt.Errorf("%senumNames must list one string per enum value", prefix)
		}
	}
	out := make([]Choice, 0, len(ids))
	for i, id := range ids {
		c := Choice{ID: id}
		if names != nil {
			c.Title = names[i]
		}
		out = append(out, c)
	}
	return out, nil
}

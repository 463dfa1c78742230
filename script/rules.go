package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// Outcomes a rule can have.
const (
	OutcomeValues   = "values"
	OutcomeDefaults = "defaults"
	OutcomeDecline  = "decline"
	OutcomeCancel   = "cancel"
	OutcomeTimeout  = "timeout"
)

// File is the JSON form of an answers file.
type File struct {
	Rules []Rule `json:"rules"`
}

// Rule is one scripted answer.
type Rule struct {
	Name    string         `json:"name"`
	Match   Match          `json:"match"`
	Outcome string         `json:"outcome"`
	Values  map[string]any `json:"values,omitempty"`
	Delay   string         `json:"delay,omitempty"`
	// Incomplete lists fields whose values a generated rule could not
	// recover (answers-from on a log written below redacted).
	Incomplete []string `json:"incomplete,omitempty"`

	message *regexp.Regexp
	delay   time.Duration
}

// Match selects questions. Every member given must fit.
type Match struct {
	// Server is the asking server's name (the question's subject).
	Server string `json:"server,omitempty"`
	// Message is a regular expression on the server's message.
	Message string `json:"message,omitempty"`
	// Fields constrains the set of field ids.
	Fields *FieldSet `json:"fields,omitempty"`
}

// FieldSet is a field-id constraint: all_of (these ids, maybe others) or
// exact (exactly these ids).
type FieldSet struct {
	AllOf []string `json:"all_of,omitempty"`
	Exact []string `json:"exact,omitempty"`
}

// Rules is a loaded, validated answers file.
type Rules struct {
	file  string
	rules []Rule
}

// LoadError names the file, the rule and the problem.
type LoadError struct {
	File, Rule, Problem string
}

func (e *LoadError) Error() string {
	if e.Rule == "" {
		return fmt.Sprintf("answers file %s: %s", e.File, e.Problem)
	}
	return fmt.Sprintf("answers file %s: rule %q: %s", e.File, e.Rule, e.Problem)
}

// Load parses and validates an answers file's content. name is the file's
// path, for errors.
func Load(name string, content []byte) (*Rules, error) {
	dec := json.NewDecoder(bytes.NewReader(content))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, &LoadError{File: name, Problem: "not a valid answers file: " + err.Error() + `; it is {"rules": [{"name", "match", "outcome", ...}]}`}
	}
	if dec.More() {
		return nil, &LoadError{File: name, Problem: "trailing data after the JSON object"}
	}
	seen := map[string]bool{}
	for i := range f.Rules {
		r := &f.Rules[i]
		label := r.Name
		if label == "" {
			return nil, &LoadError{File: name, Rule: fmt.Sprintf("#%d", i+1), Problem: "every rule needs a name"}
		}
		bad := func(p string) error { return &LoadError{File: name, Rule: label, Problem: p} }
		if seen[r.Name] {
			return nil, bad("the name is used by another rule")
		}
		seen[r.Name] = true
		switch r.Outcome {
		case OutcomeValues:
			if r.Values == nil {
				return nil, bad(`outcome "values" needs a values object`)
			}
		case OutcomeDefaults, OutcomeDecline, OutcomeCancel, OutcomeTimeout:
			if r.Values != nil {
				return nil, bad(fmt.Sprintf("outcome %q takes no values", r.Outcome))
			}
		case "":
			return nil, bad("no outcome: want values, defaults, decline, cancel or timeout")
		default:
			return nil, bad(fmt.Sprintf("unknown outcome %q: want values, defaults, decline, cancel or timeout", r.Outcome))
		}
		if r.Match.Message != "" {
			re, err := regexp.Compile(r.Match.Message)
			if err != nil {
				return nil, bad("match.message is not a valid regular expression: " + err.Error())
			}
			r.message = re
		}
		if fs := r.Match.Fields; fs != nil && (len(fs.AllOf) > 0) == (len(fs.Exact) > 0) {
			return nil, bad("match.fields needs exactly one of all_of and exact, with at least one id")
		}
		if r.Delay != "" {
			d, err := time.ParseDuration(r.Delay)
			if err != nil || d < 0 {
				return nil, bad(fmt.Sprintf("delay %q is not a duration like 500ms or 2s", r.Delay))
			}
			r.delay = d
		}
	}
	return &Rules{file: name, rules: f.Rules}, nil
}

// Len returns the number of rules.
func (rs *Rules) Len() int { return len(rs.rules) }

// Decision is what a rule decided for a question.
type Decision struct {
	// Rule is the matching rule's name.
	Rule string
	// Delay is how long to wait before applying the answer.
	Delay time.Duration
	// Timeout is true for the timeout outcome: nothing is answered.
	Timeout bool
	// Answer is the validated answer (unless Timeout).
	Answer translate.Decision
}

// ConfigError reports a matching rule whose answer does not satisfy the
// question's schema. It names the rule, the field and the violated rule.
type ConfigError struct {
	File, Rule string
	Err        error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("answers file %s: rule %q does not fit this question: %v", e.File, e.Rule, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Answer finds the first rule matching a question from server and decides
// it. ok is false when no rule matches. A matching rule whose answer is
// invalid returns a *ConfigError: the question must then go to operators
// (or be cancelled), never reach the server half-valid.
func (rs *Rules) Answer(server string, form *translate.Form) (d Decision, ok bool, err error) {
	for i := range rs.rules {
		r := &rs.rules[i]
		if !r.matches(server, form) {
			continue
		}
		d := Decision{Rule: r.Name, Delay: r.delay}
		var a aep.Answer
		switch r.Outcome {
		case OutcomeTimeout:
			d.Timeout = true
			return d, true, nil
		case OutcomeDecline, OutcomeCancel:
			a.Option = r.Outcome
		case OutcomeDefaults:
			vals, err := defaults(form, true)
			if err != nil {
				return d, true, &ConfigError{File: rs.file, Rule: r.Name, Err: err}
			}
			a.Values = vals
		case OutcomeValues:
			vals, err := defaults(form, false)
			if err != nil {
				return d, true, &ConfigError{File: rs.file, Rule: r.Name, Err: err}
			}
			keys := make([]string, 0, len(r.Values))
			for k, v := range r.Values {
				vals[k] = v
				keys = append(keys, k)
			}
			// The rule's keys are the answers file's own text: name the one
			// that fits no field (the form's check names only its fields).
			sort.Strings(keys)
			for _, k := range keys {
				if _, ok := form.Field(k); !ok {
					return d, true, &ConfigError{File: rs.file, Rule: r.Name,
						Err: &translate.InvalidAnswer{Field: k, Rule: "properties", Reason: "not a field of this question"}}
				}
			}
			a.Values = vals
		}
		dec, err := form.Decide(a)
		if err != nil {
			return d, true, &ConfigError{File: rs.file, Rule: r.Name, Err: err}
		}
		d.Answer = dec
		return d, true, nil
	}
	return Decision{}, false, nil
}

func (r *Rule) matches(server string, form *translate.Form) bool {
	if r.Match.Server != "" && r.Match.Server != server {
		return false
	}
	if r.message != nil && !r.message.MatchString(form.Message) {
		return false
	}
	if fs := r.Match.Fields; fs != nil {
		have := map[string]bool{}
		for _, f := range form.Fields {
			have[f.ID] = true
		}
		if len(fs.Exact) > 0 {
			if len(fs.Exact) != len(have) {
				return false
			}
			for _, id := range fs.Exact {
				if !have[id] {
					return false
				}
			}
		}
		for _, id := range fs.AllOf {
			if !have[id] {
				return false
			}
		}
	}
	return true
}

// defaults returns the schema's default values. With strict, a required
// field without a default is an error.
func defaults(form *translate.Form, strict bool) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range form.Fields {
		if f.Default == nil {
			if strict && f.Required {
				return nil, &translate.InvalidAnswer{Field: f.ID, Rule: "required", Reason: "the field is required and the schema gives no default"}
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(f.Default))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &translate.InvalidAnswer{Field: f.ID, Rule: "default", Reason: "the schema's default is not valid JSON"}
		}
		out[f.ID] = v
	}
	return out, nil
}

// FieldIDs returns the sorted field ids of a form, as rules name them.
func FieldIDs(form *translate.Form) []string {
	ids := make([]string, 0, len(form.Fields))
	for _, f := range form.Fields {
		ids = append(ids, f.ID)
	}
	sort.Strings(ids)
	return ids
}

// ErrNoRule is the reason recorded for an unmatched question under
// --answers-only.
var ErrNoRule = errors.New("no rule matches this question")

// Describe names a question for logs by its structure only (server and
// field ids), never its text.
func Describe(server string, form *translate.Form) string {
	return fmt.Sprintf("server %q, fields [%s]", server, strings.Join(FieldIDs(form), ","))
}

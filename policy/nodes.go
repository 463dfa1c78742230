package policy

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The readers of the document's values. Each reports a problem where the
// value is and returns ok false when the value cannot be used.

// fields reads a mapping's members, refusing duplicate and unknown keys
// and aliases. It returns the values by key, and each key's node.
func (p *parser) fields(n *yaml.Node, a at, known []string, what string) (vals, keys map[string]*yaml.Node, ok bool) {
	if !p.plain(n, a) {
		return nil, nil, false
	}
	if n.Kind != yaml.MappingNode {
		p.problem(n, a, "%s must be a mapping of fields (%s)", what, strings.Join(known, ", "))
		return nil, nil, false
	}
	vals, keys = map[string]*yaml.Node{}, map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.problem(k, a, "a key of %s is not a name; keys are %s", what, strings.Join(known, ", "))
			continue
		}
		name := k.Value
		switch {
		case keys[name] != nil:
			p.problem(k, a.sub(name), "written twice (first on line %d); keep one", keys[name].Line)
			continue
		case !contains(known, name):
			p.problem(k, a, "unknown field %q in %s; the fields are %s", truncate(name, 64), what, strings.Join(known, ", "))
			continue
		}
		keys[name], vals[name] = k, v
	}
	return vals, keys, true
}

// plain refuses aliases: a policy is read by people, so every value is
// written where it applies.
func (p *parser) plain(n *yaml.Node, a at) bool {
	if n.Kind == yaml.AliasNode {
		p.problem(n, a, "anchors and aliases (*name) are not allowed in a policy; write the value out")
		return false
	}
	return true
}

// str reads a scalar as text. Numbers are taken as written; booleans and
// null are refused, as they are almost always a missing value or quotes.
func (p *parser) str(n *yaml.Node, a at) (string, bool) {
	if !p.plain(n, a) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		p.problem(n, a, "must be a single value, not a list or mapping")
		return "", false
	}
	switch n.Tag {
	case "!!str", "!!int", "!!float":
		return n.Value, true
	case "!!null":
		p.problem(n, a, "has no value; write one, or leave the field out")
	case "!!bool":
		p.problem(n, a, "is the boolean %s; quote it if you mean the text", n.Value)
	default:
		p.problem(n, a, "has the tag %s; write a plain value", n.Tag)
	}
	return "", false
}

// strs reads one value or a list of values.
func (p *parser) strs(n *yaml.Node, a at) ([]string, bool) {
	if !p.plain(n, a) {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		s, ok := p.str(n, a)
		return []string{s}, ok
	}
	if len(n.Content) == 0 {
		p.problem(n, a, "is an empty list; list at least one value, or leave the field out")
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, c := range n.Content {
		s, good := p.str(c, a.sub(fmt.Sprint(i+1)))
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

func (p *parser) integer(n *yaml.Node, a at) (int, bool) {
	if !p.plain(n, a) {
		return 0, false
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		p.problem(n, a, "must be a whole number, like 2")
		return 0, false
	}
	return v, true
}

func (p *parser) duration(n *yaml.Node, a at) (time.Duration, bool) {
	if !p.plain(n, a) {
		return 0, false
	}
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		p.problem(n, a, "%s has no unit; write a duration like %ss or 15m", n.Value, n.Value)
		return 0, false
	}
	s, ok := p.str(n, a)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.problem(n, a, "%q is not a duration; write one like 90s, 15m or 2h", truncate(s, 64))
	case d <= 0:
		p.problem(n, a, "must be longer than 0")
	case d > MaxTimeout:
		p.problem(n, a, "%s is longer than the %s allowed", d, MaxTimeout)
	default:
		return d, true
	}
	return 0, false
}

// oneOf reads a value that must be one of choices.
func (p *parser) oneOf(n *yaml.Node, a at, choices ...string) (string, bool) {
	s, ok := p.str(n, a)
	if !ok {
		return "", false
	}
	if !contains(choices, s) {
		last := len(choices) - 1
		p.problem(n, a, "%q is not %s or %s", truncate(s, 32), strings.Join(choices[:last], ", "), choices[last])
		return "", false
	}
	return s, true
}

func (p *parser) boolean(n *yaml.Node, a at) (bool, bool) {
	if !p.plain(n, a) {
		return false, false
	}
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		p.problem(n, a, "must be true or false")
		return false, false
	}
	return v, true
}

func (p *parser) text(n *yaml.Node, a at) (string, bool) {
	s, ok := p.str(n, a)
	if !ok {
		return "", false
	}
	switch {
	case strings.TrimSpace(s) == "":
		p.problem(n, a, "is empty; write the text, or leave the field out")
	case len(s) > MaxTextLen:
		p.problem(n, a, "is %d bytes, over the %d allowed; shorten it", len(s), MaxTextLen)
	case !utf8.ValidString(s):
		p.problem(n, a, "is not valid UTF-8")
	default:
		return s, true
	}
	return "", false
}

// idProblem says why s is not a rule id or group name, or "".
func idProblem(s string) string {
	if s == "" {
		return "is empty"
	}
	if len(s) > MaxIDLen {
		return fmt.Sprintf("is longer than %d bytes", MaxIDLen)
	}
	for i, c := range s {
		alnum := c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c))
		if alnum || (i > 0 && (c == '-' || c == '_' || c == '.')) {
			continue
		}
		return "may hold only letters, digits, '-', '_' and '.' (ASCII), starting with a letter or digit"
	}
	return ""
}

// nameProblem says why s is not an operator name, or "".
func nameProblem(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > MaxNameLen:
		return fmt.Sprintf("is longer than %d bytes", MaxNameLen)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.TrimSpace(s) != s:
		return "starts or ends with white space"
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return "holds a control or invisible character"
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

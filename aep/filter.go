package aep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Filter is a parsed attr-match filter (AEP-0003 §6): a conjunction of
// predicates on envelope attributes. The zero Filter (from {}) matches every
// event. A Filter is immutable and safe for concurrent use.
type Filter struct {
	preds []predicate
}

type predicate struct {
	attr string
	// values are the accepted JSON scalars, compact-encoded.
	values []string
	// types are type patterns: exact types, or prefixes ending in "." for
	// "p.*" patterns.
	types []string
	// severity bounds (0 = unbounded).
	gte, lte Severity
}

// filterable are the core attributes a filter may name (AEP-0003 §6.2).
var filterable = map[string]bool{
	"id": true, "type": true, "subject": true, "source": true, "agent": true, "session": true,
	"run": true, "step": true, "epoch": true, "cause": true, "severity": true, "capture": true,
}

// FilterError reports a filter that must be refused (invalid-filter). It
// fails closed: a refused filter never matches everything.
type FilterError struct{ Detail string }

func (e *FilterError) Error() string { return "invalid-filter: " + e.Detail }

// ParseFilter parses an attr-match filter object.
func ParseFilter(raw []byte) (*Filter, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return &Filter{}, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, &FilterError{"a filter is a JSON object of attribute predicates"}
	}
	names := make([]string, 0, len(members))
	for k := range members {
		names = append(names, k)
	}
	sort.Strings(names)
	f := &Filter{}
	for _, k := range names {
		if !filterable[k] && (coreSet[k] || !validExtName(k)) {
			return nil, &FilterError{fmt.Sprintf("%q is not a filterable attribute", k)}
		}
		p, err := parsePredicate(k, members[k])
		if err != nil {
			return nil, err
		}
		f.preds = append(f.preds, p)
	}
	return f, nil
}

func parsePredicate(attr string, raw json.RawMessage) (predicate, error) {
	p := predicate{attr: attr}
	bad := func(d string) (predicate, error) { return p, &FilterError{fmt.Sprintf("%s: %s", attr, d)} }
	raw = bytes.TrimSpace(raw)
	if attr == "severity" && len(raw) > 0 && raw[0] == '{' {
		var cmp map[string]string
		if json.Unmarshal(raw, &cmp) != nil || len(cmp) == 0 {
			return bad(`severity comparison is {"gte": level} and/or {"lte": level}`)
		}
		for op, lvl := range cmp {
			s, err := ParseSeverity(lvl)
			if err != nil {
				return bad(err.Error())
			}
			switch op {
			case "gte":
				p.gte = s
			case "lte":
				p.lte = s
			default:
				return bad(fmt.Sprintf("%q is not a severity operator (gte, lte)", op))
			}
		}
		return p, nil
	}
	var items []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &items) != nil {
			return bad("inclusion must be an array of scalars")
		}
		if len(items) == 0 {
			return bad("an inclusion array needs at least one value")
		}
	} else {
		items = []json.RawMessage{raw}
	}
	for _, it := range items {
		var v any
		if json.Unmarshal(it, &v) != nil {
			return bad("malformed value")
		}
		switch s := v.(type) {
		case string:
			if attr == "type" {
				if s == "*" || (strings.Contains(s, "*") && !strings.HasSuffix(s, ".*")) || strings.Count(s, "*") > 1 {
					return bad(`type patterns are exact types or "prefix.*"`)
				}
				if strings.HasSuffix(s, ".*") {
					p.types = append(p.types, strings.TrimSuffix(s, "*"))
				} else {
					p.types = append(p.types, s)
				}
				continue
			}
			if strings.Contains(s, "*") {
				return bad("patterns are allowed only on type")
			}
			if attr == "severity" {
				if _, err := ParseSeverity(s); err != nil {
					return bad(err.Error())
				}
			}
			if attr == "capture" {
				if _, err := ParseCapture(s); err != nil {
					return bad(err.Error())
				}
			}
		case bool:
		case float64:
			if s != float64(int64(s)) {
				return bad("numbers must be integers")
			}
		default:
			return bad("values must be strings, integers or booleans")
		}
		var c bytes.Buffer
		json.Compact(&c, it)
		p.values = append(p.values, c.String())
	}
	return p, nil
}

// Match reports whether e satisfies every predicate (AEP-0003 §6.2).
func (f *Filter) Match(e *Event) bool {
	for i := range f.preds {
		if !f.preds[i].match(e) {
			return false
		}
	}
	return true
}

func (p *predicate) match(e *Event) bool {
	switch p.attr {
	case "type":
		for _, t := range p.types {
			if strings.HasSuffix(t, ".") {
				if strings.HasPrefix(e.Type, t) && len(e.Type) > len(t) {
					return true
				}
			} else if e.Type == t {
				return true
			}
		}
		return p.anyValue(quote(e.Type))
	case "severity":
		s := e.EffectiveSeverity()
		if p.gte != 0 || p.lte != 0 {
			return (p.gte == 0 || s >= p.gte) && (p.lte == 0 || s <= p.lte)
		}
		return p.anyValue(quote(s.String()))
	case "capture":
		return p.anyValue(quote(e.EffectiveCapture().String()))
	case "epoch":
		return p.anyValue(fmt.Sprint(e.EpochOrZero()))
	}
	var v string
	switch p.attr {
	case "id":
		v = e.ID
	case "subject":
		v = e.Subject
	case "source":
		v = e.Source
	case "agent":
		v = e.Agent
	case "session":
		v = e.Session
	case "run":
		v = e.Run
	case "step":
		v = e.Step
	case "cause":
		v = e.Cause
	default:
		raw, ok := e.Extensions[p.attr]
		if !ok {
			return false
		}
		var c bytes.Buffer
		if json.Compact(&c, raw) != nil {
			return false
		}
		return p.anyValue(c.String())
	}
	if v == "" {
		return false // absent attributes never match (§6.2 rule 5)
	}
	return p.anyValue(quote(v))
}

func (p *predicate) anyValue(v string) bool {
	for _, x := range p.values {
		if x == v {
			return true
		}
	}
	return false
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

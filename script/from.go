package script

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// FromLogs turns the answered questions of session logs into rules, one per
// question, matched by server and exact field set, in the order the
// questions were asked. A log written below redacted lacks free-text
// values: such a rule lists the missing fields in Incomplete, and no value
// is ever invented. warn receives one line per incomplete rule, per line
// skipped (a torn last line, say; the file and line are named) and per gap
// the log records.
func FromLogs(logs map[string]io.Reader, order []string, warn func(string)) (*File, error) {
	f := &File{Rules: []Rule{}}
	used := map[string]int{}
	for _, name := range order {
		type asked struct {
			id     string
			server string
			fields []aep.FieldSpec
		}
		var questions []asked
		byID := map[string]*asked{}
		answers := map[string]struct {
			a       aep.AttentionAnswered
			capture aep.Capture
		}{}
		err := bus.ReadLog(logs[name], name, func(ev *aep.Event, line int) {
			if gap := bus.GapString(ev); gap != "" {
				warn(fmt.Sprintf("%s:%d: %s; no rule can be made for a question asked or answered there", name, line, gap))
				return
			}
			switch ev.Type {
			case "attention.requested":
				var d aep.AttentionRequested
				json.Unmarshal(ev.Data, &d)
				if d.Kind != "form" {
					return
				}
				questions = append(questions, asked{id: ev.ID, server: ev.Subject, fields: d.Fields})
				byID[ev.ID] = &questions[len(questions)-1]
			case "attention.answered":
				var d aep.AttentionAnswered
				dec := json.NewDecoder(bytes.NewReader(ev.Data))
				dec.UseNumber()
				dec.Decode(&d)
				answers[ev.Subject] = struct {
					a       aep.AttentionAnswered
					capture aep.Capture
				}{d, ev.EffectiveCapture()}
			}
		}, func(s bus.Skipped) { warn(s.String()) })
		if err != nil {
			return nil, err
		}
		for _, q := range questions {
			ans, ok := answers[q.id]
			if !ok {
				continue
			}
			ids := make([]string, 0, len(q.fields))
			for _, fs := range q.fields {
				ids = append(ids, fs.ID)
			}
			sort.Strings(ids)
			used[q.server]++
			r := Rule{Name: fmt.Sprintf("%s #%d", q.server, used[q.server]),
				Match: Match{Server: q.server, Fields: &FieldSet{Exact: ids}}}
			switch opt := ans.a.Answer.Option; {
			case opt == OutcomeDecline || opt == OutcomeCancel:
				r.Outcome = opt
			default:
				r.Outcome = OutcomeValues
				r.Values, r.Incomplete = recoveredValues(q.fields, ans.a.Answer.Values, ans.capture)
			}
			if len(r.Incomplete) > 0 {
				warn(fmt.Sprintf("rule %q is incomplete: field(s) %v have no usable recorded value (secret fields are never recorded, "+
					"redacted text is not the answer, and logs below redacted hold no free text); add them to its values before use", r.Name, r.Incomplete))
			}
			f.Rules = append(f.Rules, r)
		}
	}
	return f, nil
}

// recoveredValues returns the recorded values a rule can replay, and the
// fields whose values the log cannot give back: a secret field (its value
// is never recorded), a value the redaction pipeline rewrote (it holds a
// [REDACTED:…] marker, which is not what the operator answered), and,
// below redacted, a free-text field with no value (AEP-0002 §5.3 drops
// it). A placeholder is never emitted as a value.
func recoveredValues(fields []aep.FieldSpec, recorded map[string]any, capture aep.Capture) (map[string]any, []string) {
	values := map[string]any{}
	var incomplete []string
	for _, fs := range fields {
		v, answered := recorded[fs.ID]
		switch {
		case answered && !fs.Secret && !redactedValue(v):
			values[fs.ID] = v
		case answered:
			incomplete = append(incomplete, fs.ID)
		case capture < aep.CaptureRedacted && (fs.Type == "string" || fs.Other || fs.Secret):
			incomplete = append(incomplete, fs.ID)
		}
	}
	return values, incomplete
}

// redactedValue reports whether v holds text the redaction pipeline wrote.
func redactedValue(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "[REDACTED:")
	case []any:
		for _, it := range t {
			if redactedValue(it) {
				return true
			}
		}
	}
	return false
}

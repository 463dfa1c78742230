package script

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// FromLogs turns the answered questions of session logs into rules, one per
// question, matched by server and exact field set, in the order the
// questions were asked. A log written below redacted lacks free-text
// values: such a rule lists the missing fields in Incomplete, and no value
// is ever invented. warn receives one line per incomplete rule and per
// unreadable line.
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
		sc := bufio.NewScanner(logs[name])
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		line := 0
		for sc.Scan() {
			line++
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			ev, err := aep.Parse(sc.Bytes())
			if err != nil {
				warn(fmt.Sprintf("%s:%d: skipped: %v", name, line, err))
				continue
			}
			switch ev.Type {
			case "attention.requested":
				var d aep.AttentionRequested
				json.Unmarshal(ev.Data, &d)
				if d.Kind != "form" {
					continue
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
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
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
				r.Values = map[string]any{}
				for k, v := range ans.a.Answer.Values {
					r.Values[k] = v
				}
				if ans.capture < aep.CaptureRedacted {
					for _, fs := range q.fields {
						if _, have := r.Values[fs.ID]; !have && (fs.Type == "string" || fs.Other) {
							r.Incomplete = append(r.Incomplete, fs.ID)
						}
					}
				}
			}
			if len(r.Incomplete) > 0 {
				warn(fmt.Sprintf("rule %q is incomplete: the log was written below redacted, so field(s) %v have no recorded value; add them to its values before use", r.Name, r.Incomplete))
			}
			f.Rules = append(f.Rules, r)
		}
	}
	return f, nil
}

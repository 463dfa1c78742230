// Package logcheck validates a bridge session log (JSONL) the way an
// independent history consumer would: every line is a valid AEP event, seq
// increases within the session, every attention request reaches exactly one
// terminal before session.ended, and events at the metadata level carry no
// free text. Tests run it on every log they write.
package logcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Report summarises a valid log.
type Report struct {
	Events    int
	Questions int
	Types     map[string]int
	// Lines holds the parsed events in order.
	Lines []aep.Event
}

var metadataPrompt = regexp.MustCompile(`^[A-Za-z0-9._-]+ requests [a-z]+( \(\d+ fields?\)|: .*)?$`)

// File checks the log at path.
func File(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Bytes(b)
}

// Bytes checks a log's content.
func Bytes(b []byte) (*Report, error) {
	r := &Report{Types: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var (
		lastSeq  = int64(-1)
		session  string
		open     = map[string]bool{}
		fields   = map[string][]aep.FieldSpec{}
		terminal = map[string]bool{}
		ended    bool
		seenIDs  = map[string]bool{}
	)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		ev, err := aep.Parse(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		key := ev.Source + " " + ev.ID
		if seenIDs[key] {
			return nil, fmt.Errorf("line %d: event id %s appears twice in one history", n, ev.ID)
		}
		seenIDs[key] = true
		r.Events++
		r.Types[ev.Type]++
		r.Lines = append(r.Lines, *ev)
		if session == "" {
			session = ev.Session
		} else if ev.Session != session {
			return nil, fmt.Errorf("line %d: session %q in the log of session %q", n, ev.Session, session)
		}
		if ev.Seq != nil {
			if *ev.Seq <= lastSeq {
				return nil, fmt.Errorf("line %d: seq %d does not increase (previous %d)", n, *ev.Seq, lastSeq)
			}
			lastSeq = *ev.Seq
		}
		if ended && ev.Seq != nil {
			return nil, fmt.Errorf("line %d: %s after session.ended", n, ev.Type)
		}
		var data map[string]json.RawMessage
		_ = json.Unmarshal(ev.Data, &data)
		switch ev.Type {
		case "attention.requested":
			r.Questions++
			open[ev.ID] = true
			var d aep.AttentionRequested
			_ = json.Unmarshal(ev.Data, &d)
			fields[ev.ID] = d.Fields
			if ev.EffectiveCapture() <= aep.CaptureMetadata && ev.Data != nil {
				if !metadataPrompt.MatchString(d.Prompt) {
					return nil, fmt.Errorf("line %d: metadata-level prompt %q is not synthesized from structure", n, d.Prompt)
				}
				for _, f := range d.Fields {
					if f.Label != f.ID {
						return nil, fmt.Errorf("line %d: metadata-level label of field %q is not its id", n, f.ID)
					}
					for _, c := range f.Choices {
						if c.Label != c.ID {
							return nil, fmt.Errorf("line %d: metadata-level label of choice %q is not its id", n, c.ID)
						}
					}
				}
			}
		case "attention.answered":
			if ev.EffectiveCapture() <= aep.CaptureMetadata {
				var d aep.AttentionAnswered
				_ = json.Unmarshal(ev.Data, &d)
				if err := structuralOnly(fields[ev.Subject], d.Answer.Values); err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
			}
		case "attention.resolved", "attention.timeout":
			if terminal[ev.Subject] {
				return nil, fmt.Errorf("line %d: a second terminal for attention request %s", n, ev.Subject)
			}
			if !open[ev.Subject] {
				return nil, fmt.Errorf("line %d: %s for unknown attention request %s", n, ev.Type, ev.Subject)
			}
			terminal[ev.Subject] = true
			delete(open, ev.Subject)
		case "session.ended":
			if ended {
				return nil, fmt.Errorf("line %d: a second session.ended", n)
			}
			if len(open) > 0 {
				return nil, fmt.Errorf("line %d: session.ended with %d attention request(s) still pending", n, len(open))
			}
			ended = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// structuralOnly checks that metadata-level values hold no free text: every
// string is a choice id of its field.
func structuralOnly(fields []aep.FieldSpec, values map[string]any) error {
	for k, v := range values {
		var spec *aep.FieldSpec
		for i := range fields {
			if fields[i].ID == k {
				spec = &fields[i]
			}
		}
		strs := []any{v}
		if a, ok := v.([]any); ok {
			strs = a
		}
		for _, s := range strs {
			str, ok := s.(string)
			if !ok {
				continue
			}
			if spec == nil || spec.Type != "select" || !hasChoice(spec, str) {
				return fmt.Errorf("metadata-level answer carries free text in field %q", k)
			}
		}
	}
	return nil
}

func hasChoice(f *aep.FieldSpec, s string) bool {
	for _, c := range f.Choices {
		if c.ID == s {
			return true
		}
	}
	return false
}

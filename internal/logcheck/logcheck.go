// Package logcheck validates a bridge session log (JSONL) the way an
// independent history consumer would: every line is a valid AEP event, seq
// increases within the session, every attention request reaches exactly one
// terminal before session.ended, and events at the metadata level carry no
// free text. Like every reader of the logs it skips a torn last line (a
// crash mid-write) and reports it, and it accepts gap records (bus.Gap).
// Tests run it on every log they write.
package logcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// Report summarises a valid log.
type Report struct {
	Events    int
	Questions int
	Types     map[string]int
	// Lines holds the parsed events in order.
	Lines []aep.Event
	// Skipped says which lines were skipped (a torn last line) and why.
	Skipped []string
	// Gaps holds the gap records: events the log could not write.
	Gaps []bus.Gap
}

var metadataPrompt = regexp.MustCompile(`^[A-Za-z0-9._-]+ requests [a-z]+( \(\d+ fields?\)|: .*)?$`)

// File checks the log at path.
func File(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Bytes checks a log's content.
func Bytes(b []byte) (*Report, error) { return Read(bytes.NewReader(b), "the log") }

// Read checks the log r holds; name names it in what the report says. A
// torn last line (a crash mid-write) is skipped and listed in
// Report.Skipped, as every reader of the logs skips it; any other line
// that is not a valid event fails the check.
func Read(r io.Reader, name string) (*Report, error) {
	c := &checker{r: &Report{Types: map[string]int{}}, lastSeq: -1, open: map[string]bool{},
		fields: map[string][]aep.FieldSpec{}, terminal: map[string]bool{}, seenIDs: map[string]bool{}}
	var failed error
	err := bus.ReadLog(r, name, func(ev *aep.Event, n int) {
		if failed != nil {
			return
		}
		if err := c.line(ev); err != nil {
			failed = fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}, func(s bus.Skipped) {
		if !s.Torn && failed == nil {
			failed = fmt.Errorf("%s:%d: %w", s.Name, s.Line, s.Err)
		}
		c.r.Skipped = append(c.r.Skipped, s.String())
	})
	if err != nil {
		return nil, err
	}
	if failed != nil {
		return nil, failed
	}
	return c.r, nil
}

// checker is the state of one log's check.
type checker struct {
	r        *Report
	lastSeq  int64
	session  string
	open     map[string]bool
	fields   map[string][]aep.FieldSpec
	terminal map[string]bool
	ended    bool
	seenIDs  map[string]bool
}

// line checks one line against the envelope, the session's order, and the
// lifecycle rules.
func (c *checker) line(ev *aep.Event) error {
	key := ev.Source + " " + ev.ID
	if c.seenIDs[key] {
		return fmt.Errorf("event id %s appears twice in one history", ev.ID)
	}
	c.seenIDs[key] = true
	c.r.Events++
	c.r.Types[ev.Type]++
	c.r.Lines = append(c.r.Lines, *ev)
	switch {
	case aep.IsAgentScoped(ev.Type):
		// No session: a health report about the emitter (a gap record).
	case c.session == "":
		c.session = ev.Session
	case ev.Session != c.session:
		return fmt.Errorf("session %q in the log of session %q", ev.Session, c.session)
	}
	if ev.Seq != nil {
		if c.ended {
			return fmt.Errorf("%s after session.ended", ev.Type)
		}
		if *ev.Seq <= c.lastSeq {
			return fmt.Errorf("seq %d does not increase (previous %d)", *ev.Seq, c.lastSeq)
		}
		c.lastSeq = *ev.Seq
	}
	if g, ok := bus.LogGap(ev); ok {
		c.r.Gaps = append(c.r.Gaps, g)
	}
	// After a gap, a question's request or its terminal may be among the
	// events the log could not write.
	gapped := len(c.r.Gaps) > 0
	switch ev.Type {
	case "attention.requested":
		return c.requested(ev)
	case "attention.answered":
		if ev.EffectiveCapture() <= aep.CaptureMetadata {
			var d aep.AttentionAnswered
			_ = json.Unmarshal(ev.Data, &d)
			return structuralOnly(c.fields[ev.Subject], d.Answer.Values)
		}
	case "attention.resolved", "attention.timeout":
		if c.terminal[ev.Subject] {
			return fmt.Errorf("a second terminal for attention request %s", ev.Subject)
		}
		if !c.open[ev.Subject] && !gapped {
			return fmt.Errorf("%s for unknown attention request %s", ev.Type, ev.Subject)
		}
		c.terminal[ev.Subject] = true
		delete(c.open, ev.Subject)
	case "session.ended":
		if c.ended {
			return fmt.Errorf("a second session.ended")
		}
		if len(c.open) > 0 && !gapped {
			return fmt.Errorf("session.ended with %d attention request(s) still pending", len(c.open))
		}
		c.ended = true
	}
	return nil
}

// requested opens a question; at the metadata level its prompt must be
// synthesized from structure and its labels must be ids.
func (c *checker) requested(ev *aep.Event) error {
	c.r.Questions++
	c.open[ev.ID] = true
	var d aep.AttentionRequested
	_ = json.Unmarshal(ev.Data, &d)
	c.fields[ev.ID] = d.Fields
	if ev.EffectiveCapture() > aep.CaptureMetadata || ev.Data == nil {
		return nil
	}
	if !metadataPrompt.MatchString(d.Prompt) {
		return fmt.Errorf("metadata-level prompt %q is not synthesized from structure", d.Prompt)
	}
	for _, f := range d.Fields {
		if f.Label != f.ID {
			return fmt.Errorf("metadata-level label of field %q is not its id", f.ID)
		}
		for _, ch := range f.Choices {
			if ch.Label != ch.ID {
				return fmt.Errorf("metadata-level label of choice %q is not its id", ch.ID)
			}
		}
	}
	return nil
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

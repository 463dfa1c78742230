package aep

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxIdentLen is the longest, in bytes, that an identifying string of an
// envelope may be: id, type, source, agent, session, subject and cause.
const MaxIdentLen = 1024

// hygieneRule names the rule in a ValidationError: the bridge's own, not a
// section of the specification.
const hygieneRule = "envelope hygiene"

// CheckHygiene refuses an event whose identifying strings (id, type, source,
// agent, session, subject, cause) are longer than MaxIdentLen bytes, are not
// UTF-8, or hold a control character (Unicode Cc) or a line or paragraph
// separator. These strings name things in logs, terminals, SSE fields and
// file names, where such characters forge lines. It returns a
// *ValidationError naming the attribute. Parse applies it.
func (e *Event) CheckHygiene() error {
	for _, a := range []struct{ name, v string }{
		{"id", e.ID}, {"type", e.Type}, {"source", e.Source}, {"agent", e.Agent},
		{"session", e.Session}, {"subject", e.Subject}, {"cause", e.Cause},
	} {
		if len(a.v) > MaxIdentLen {
			return &ValidationError{Rule: hygieneRule, Attr: a.name,
				Msg: fmt.Sprintf("is %d bytes; identifying strings are at most %d", len(a.v), MaxIdentLen)}
		}
		if !utf8.ValidString(a.v) {
			return &ValidationError{Rule: hygieneRule, Attr: a.name, Msg: "is not valid UTF-8"}
		}
		for i, r := range a.v {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
				return &ValidationError{Rule: hygieneRule, Attr: a.name,
					Msg: fmt.Sprintf("holds the control character %U at byte %d; identifying strings are printable text", r, i)}
			}
		}
	}
	return nil
}

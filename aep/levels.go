package aep

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Capture is an AEP content-capture level (AEP-0001 §8.2). Levels are totally
// ordered: None < Metadata < Redacted < Full. The zero value is not a level;
// an absent capture attribute means Metadata.
type Capture int

// The capture levels, in order.
const (
	CaptureNone Capture = iota + 1
	CaptureMetadata
	CaptureRedacted
	CaptureFull
)

var captureNames = map[Capture]string{
	CaptureNone:     "none",
	CaptureMetadata: "metadata",
	CaptureRedacted: "redacted",
	CaptureFull:     "full",
}

// ParseCapture parses a capture level name.
func ParseCapture(s string) (Capture, error) {
	for c, n := range captureNames {
		if n == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown capture level %q: want none, metadata, redacted or full", s)
}

// String returns the wire name of the level.
func (c Capture) String() string {
	if n, ok := captureNames[c]; ok {
		return n
	}
	return fmt.Sprintf("capture(%d)", int(c))
}

// OrDefault returns c, or Metadata when c is unset (AEP-0001 §5.1 #16).
func (c Capture) OrDefault() Capture {
	if c == 0 {
		return CaptureMetadata
	}
	return c
}

// MarshalJSON encodes the wire name.
func (c Capture) MarshalJSON() ([]byte, error) {
	if _, ok := captureNames[c]; !ok {
		return nil, fmt.Errorf("invalid capture level %d", int(c))
	}
	// The names are plain ASCII words: quoting them is their encoding.
	return strconv.AppendQuote(make([]byte, 0, len(c.String())+2), c.String()), nil
}

// UnmarshalJSON decodes a wire name.
func (c *Capture) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("capture must be a string: %w", err)
	}
	v, err := ParseCapture(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Severity is an AEP severity (AEP-0001 §8.1), totally ordered from Debug to
// Critical. The zero value is not a level; an absent severity means Info.
type Severity int

// The severities, in order.
const (
	SeverityDebug Severity = iota + 1
	SeverityInfo
	SeverityNotice
	SeverityWarning
	SeverityError
	SeverityCritical
)

var severityNames = map[Severity]string{
	SeverityDebug:    "debug",
	SeverityInfo:     "info",
	SeverityNotice:   "notice",
	SeverityWarning:  "warning",
	SeverityError:    "error",
	SeverityCritical: "critical",
}

// ParseSeverity parses a severity name.
func ParseSeverity(s string) (Severity, error) {
	for v, n := range severityNames {
		if n == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q: want debug, info, notice, warning, error or critical", s)
}

// String returns the wire name of the severity.
func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// OrDefault returns s, or Info when s is unset (AEP-0001 §5.1 #15).
func (s Severity) OrDefault() Severity {
	if s == 0 {
		return SeverityInfo
	}
	return s
}

// MarshalJSON encodes the wire name.
func (s Severity) MarshalJSON() ([]byte, error) {
	if _, ok := severityNames[s]; !ok {
		return nil, fmt.Errorf("invalid severity %d", int(s))
	}
	// The names are plain ASCII words: quoting them is their encoding.
	return strconv.AppendQuote(make([]byte, 0, len(s.String())+2), s.String()), nil
}

// UnmarshalJSON decodes a wire name.
func (s *Severity) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("severity must be a string: %w", err)
	}
	v, err := ParseSeverity(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

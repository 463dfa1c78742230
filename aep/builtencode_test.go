package aep

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// TestEncodeWithBuiltDataEscapesAnywhere holds EncodeWithBuiltData to
// Encode for envelopes with one HTML-sensitive character each, wherever
// it sits, with extensions Validate refuses, with data that is not
// EncodeBuilt's, and with levels out of range.
func TestEncodeWithBuiltDataEscapesAnywhere(t *testing.T) {
	t.Parallel()
	base := func() Event {
		return Event{AEP: Version, ID: "01J0000000000000000000000A", Type: "tool.completed", Subject: "echo",
			Time: "2026-01-02T03:04:05.000Z", Source: "aep://h/agent/a/session/s", Agent: "a", Session: "s",
			Seq: Int64(3), Epoch: Int64(0), Capture: CaptureMetadata,
			Data: json.RawMessage(`{"tool":{"name":"echo"},"status":"success","duration_ms":3}`)}
	}
	cases := map[string]func(*Event){
		"plain":                       func(*Event) {},
		"U+2028 alone in the subject": func(e *Event) { e.Subject = "a\u2028b" },
		"U+2029 alone in the subject": func(e *Event) { e.Subject = "a\u2029b" },
		"& alone in the subject":      func(e *Event) { e.Subject = "a&b" },
		"> alone in the agent":        func(e *Event) { e.Agent = "a>b" },
		"< late, in the cause":        func(e *Event) { e.Cause = strings.Repeat("x", 300) + "<" },
		"& in an extension":           func(e *Event) { e.Extensions = map[string]json.RawMessage{"zz": json.RawMessage(`"&"`)} },
		"U+2028 in an extension":      func(e *Event) { e.Extensions = map[string]json.RawMessage{"zz": json.RawMessage("\"\u2028\"")} },
		"a non-scalar extension":      func(e *Event) { e.Extensions = map[string]json.RawMessage{"zz": json.RawMessage(`[1, 2]`)} },
		"an extension with a space":   func(e *Event) { e.Extensions = map[string]json.RawMessage{"zz": json.RawMessage(`1 `)} },
		"an extension of a core name": func(e *Event) { e.Extensions = map[string]json.RawMessage{"seq": json.RawMessage(`1`)} },
		"no data":                     func(e *Event) { e.Data = nil },
		"data that is blank":          func(e *Event) { e.Data = json.RawMessage(" ") },
		"data that is null":           func(e *Event) { e.Data = json.RawMessage("null") },
		"data cut short":              func(e *Event) { e.Data = json.RawMessage("{") },
		"data padded":                 func(e *Event) { e.Data = json.RawMessage(` {"a": 1} `) },
		"data that is an array":       func(e *Event) { e.Data = json.RawMessage(`[1,"<"]`) },
		"data with a raw <":           func(e *Event) { e.Data = json.RawMessage(`{"a":"<"}`) },
		"a severity out of range":     func(e *Event) { e.Severity = Severity(9) },
		"a capture out of range":      func(e *Event) { e.Capture = Capture(7) },
	}
	for name, change := range cases {
		ev := base()
		change(&ev)
		want, werr := ev.Encode()
		got, err := ev.EncodeWithBuiltData()
		if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: EncodeWithBuiltData\n got %s (%v)\nwant %s (%v)", name, got, err, want, werr)
		}
		// json.Marshal escapes for HTML on its own: what Encode gives
		// must come out of that pass unchanged.
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, got)
		if err == nil && !bytes.Equal(escaped.Bytes(), got) {
			t.Errorf("%s: EncodeWithBuiltData left a character unescaped:\n got %s\nwant %s", name, got, escaped.Bytes())
		}
		if (ev.Severity > SeverityCritical || ev.Capture > CaptureFull) && err == nil {
			t.Errorf("%s: EncodeWithBuiltData encoded a level out of range: %s", name, got)
		}
	}
}

// TestValidExtNameIsTheGrammar holds the hand-written check to the
// grammar [a-z0-9]{1,20}.
func TestValidExtNameIsTheGrammar(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[a-z0-9]{1,20}$`)
	names := []string{"", "a", "z9", strings.Repeat("a", 20), strings.Repeat("a", 21), "A", "a-b", "a_b", "a\n",
		"é", "a b", "0", "`", "{", "/", ":", "@", "[", "aepmcpbridgeclient"}
	for c := range 256 {
		names = append(names, string([]byte{byte(c)}), "x"+string([]byte{byte(c)}))
	}
	for _, n := range names {
		if got, want := validExtName(n), re.MatchString(n); got != want {
			t.Errorf("validExtName(%q) = %v; the grammar says %v", n, got, want)
		}
	}
}

// TestSourceCheckRemembersOnlyValidSources: a source refused once is
// refused again, also right after a valid one was accepted.
func TestSourceCheckRemembersOnlyValidSources(t *testing.T) {
	for _, seq := range [][]string{
		{"not a uri", "not a uri"},
		{"aep://h/agent/a/session/s", "relative/path", "relative/path", "aep://h/agent/a/session/s"},
		{"%zz", "aep://h/agent/a/session/s", "%zz"},
	} {
		for _, s := range seq {
			ev := Event{AEP: Version, ID: "x", Type: "progress.status", Time: "2026-01-02T03:04:05Z", Source: s,
				Agent: "a", Session: "s", Seq: Int64(0)}
			err := ev.validateEnvelope()
			var ve *ValidationError
			refused := err != nil && errors.As(err, &ve) && ve.Attr == "source"
			if want := !strings.Contains(s, "://"); refused != want {
				t.Errorf("source %q in %q: refused %v (%v); want refused %v", s, seq, refused, err, want)
			}
		}
	}
}

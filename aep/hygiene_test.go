package aep

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRefusesUnhygienicIdentifiers(t *testing.T) {
	base := map[string]string{"id": "X", "type": "control.attention.respond", "subject": "R", "source": "aep://h/agent/op",
		"agent": "op", "session": "s", "cause": "C"}
	event := func(attr, value string) string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		m[attr] = value
		return `{"aep":"0.1","id":` + quoteJSON(m["id"]) + `,"type":` + quoteJSON(m["type"]) + `,"subject":` + quoteJSON(m["subject"]) +
			`,"time":"2026-01-01T00:00:00Z","source":` + quoteJSON(m["source"]) + `,"agent":` + quoteJSON(m["agent"]) +
			`,"session":` + quoteJSON(m["session"]) + `,"cause":` + quoteJSON(m["cause"]) + `,"data":{"answer":{"option":"decline"}}}`
	}
	if _, err := Parse([]byte(event("id", "X"))); err != nil {
		t.Fatalf("the clean event: %v", err)
	}
	for _, tc := range []struct {
		name, attr, value, want string
	}{
		{name: "newline in session", attr: "session", value: "s\nid: 9", want: "U+000A"},
		{name: "carriage return in id", attr: "id", value: "X\r", want: "U+000D"},
		{name: "NUL in agent", attr: "agent", value: "op\x00", want: "U+0000"},
		{name: "escape in subject", attr: "subject", value: "\x1b[2J", want: "U+001B"},
		{name: "DEL in cause", attr: "cause", value: "C\x7f", want: "U+007F"},
		{name: "C1 control in source", attr: "source", value: "aep://h/\u0085", want: "U+0085"},
		{name: "line separator in session", attr: "session", value: "a\u2028b", want: "U+2028"},
		{name: "tab in agent", attr: "agent", value: "o\tp", want: "U+0009"},
		{name: "overlong session", attr: "session", value: strings.Repeat("s", MaxIdentLen+1), want: "at most 1024"},
		{name: "overlong subject", attr: "subject", value: strings.Repeat("é", MaxIdentLen/2+1), want: "at most 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(event(tc.attr, tc.value)))
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Attr != tc.attr || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want a ValidationError on %s saying %q", err, tc.attr, tc.want)
			}
		})
	}
	// At the limit, and printable non-ASCII, pass.
	for _, v := range []string{strings.Repeat("s", MaxIdentLen), "sess-ünïcode-会话"} {
		if _, err := Parse([]byte(event("session", v))); err != nil {
			t.Errorf("session of %d bytes: %v", len(v), err)
		}
	}
}

func TestCheckHygieneRefusesInvalidUTF8(t *testing.T) {
	e := Event{ID: "X", Session: "s\xff"}
	if err := e.CheckHygiene(); err == nil || !strings.Contains(err.Error(), "session: is not valid UTF-8") {
		t.Fatalf("got %v; want session named as not UTF-8", err)
	}
}

func quoteJSON(s string) string {
	b, _ := marshalNoEscape(s)
	return string(b)
}

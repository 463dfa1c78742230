package aep

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestMarshalOmitsAbsentAttributes(t *testing.T) {
	e := Event{AEP: Version, ID: "01J", Type: "session.ended", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/a/session/s", Agent: "a", Session: "s", Seq: Int64(0)}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"aep":"0.1","id":"01J","type":"session.ended","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":0}`
	if string(b) != want {
		t.Fatalf("got %s; want %s", b, want)
	}
	if strings.Contains(string(b), "null") {
		t.Fatal("absent attributes must be omitted, never null")
	}
}

func TestSetExtensionRefusesIllegalAttributes(t *testing.T) {
	tests := []struct {
		name  string
		attr  string
		value any
		ok    bool
	}{
		{"legal string", "acmeregion", "eu-1", true},
		{"legal integer", "acmeshard", 3, true},
		{"legal boolean", "acmecanary", true, true},
		{"core collision", "session", "x", false},
		{"data collision", "data", "x", false},
		{"uppercase", "AcmeRegion", "x", false},
		{"underscore", "acme_region", "x", false},
		{"too long", "acmeveryveryverylongext", "x", false},
		{"object value", "acmemeta", map[string]any{"k": 1}, false},
		{"float value", "acmeratio", 0.5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Event
			err := e.SetExtension(tt.attr, tt.value)
			if tt.ok != (err == nil) {
				t.Fatalf("SetExtension(%q, %v) = %v; want ok=%v", tt.attr, tt.value, err, tt.ok)
			}
			var ve *ValidationError
			if err != nil && (!errors.As(err, &ve) || ve.Rule != "AEP-0001 §5.4") {
				t.Fatalf("error %v does not name AEP-0001 §5.4", err)
			}
		})
	}
}

func TestExtensionsSurviveRoundTrip(t *testing.T) {
	in := `{"aep":"0.1","id":"X","type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":1,"zeta":true,"acmeregion":"eu-1","acmeshard":7}`
	e, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(e)
	want := `{"aep":"0.1","id":"X","type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":1,"acmeregion":"eu-1","acmeshard":7,"zeta":true}`
	if string(out) != want {
		t.Fatalf("got %s; want %s", out, want)
	}
}

func TestLevelsAreOrdered(t *testing.T) {
	caps := []string{"none", "metadata", "redacted", "full"}
	for i := 1; i < len(caps); i++ {
		a, _ := ParseCapture(caps[i-1])
		b, _ := ParseCapture(caps[i])
		if !(a < b) {
			t.Errorf("%s < %s does not hold", caps[i-1], caps[i])
		}
	}
	sevs := []string{"debug", "info", "notice", "warning", "error", "critical"}
	for i := 1; i < len(sevs); i++ {
		a, _ := ParseSeverity(sevs[i-1])
		b, _ := ParseSeverity(sevs[i])
		if !(a < b) {
			t.Errorf("%s < %s does not hold", sevs[i-1], sevs[i])
		}
	}
	if Capture(0).OrDefault() != CaptureMetadata || Severity(0).OrDefault() != SeverityInfo {
		t.Error("absent capture/severity defaults are metadata/info")
	}
}

func TestIDsAreMonotonicULIDs(t *testing.T) {
	prev := ""
	for i := 0; i < 1000; i++ {
		id := NewID()
		if len(id) != 26 {
			t.Fatalf("id %q is not a 26-character ULID", id)
		}
		if id <= prev {
			t.Fatalf("id %q does not sort after %q", id, prev)
		}
		prev = id
	}
}

func TestValidateRejectsFieldsAboveCapture(t *testing.T) {
	e := Event{AEP: Version, ID: "X", Type: "attention.answered", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/a", Agent: "a", Session: "s", Seq: Int64(1), Capture: CaptureMetadata,
		Data: json.RawMessage(`{"answer":{"text":"free text"}}`)}
	err := e.Validate()
	if err == nil || !strings.Contains(err.Error(), "§8.2(a)") || !strings.Contains(err.Error(), "data.answer.text") {
		t.Fatalf("got %v; want an AEP-0001 §8.2(a) error on data.answer.text", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"aep":"0.1","id":"X","type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":1,"acmeregion":"eu-1"}`)
	f.Add(`{"aep":"0.1","id":"X","type":"attention.requested","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":0,"capture":"redacted","data":{"kind":"form","prompt":"p","fields":[{"id":"1","type":"select","label":"L","choices":[{"id":"a","label":"A"}]}]}}`)
	f.Add(`{"aep":"0.1","id":"X","type":"control.attention.respond","subject":"R","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/op","agent":"op","session":"s","data":{"answer":{"values":{"a":1}}}}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse([]byte(s))
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse returned %T, not *ValidationError: %v", err, err)
			}
			return
		}
		// A valid event re-encodes to a valid event, and down-levels to one.
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("re-encoding a valid event: %v", err)
		}
		if _, err := Parse(b); err != nil {
			t.Fatalf("re-encoded event invalid: %v\n%s", err, b)
		}
		for _, c := range []Capture{CaptureNone, CaptureMetadata, CaptureRedacted} {
			d, err := Downlevel(*e, c)
			if err != nil {
				t.Fatalf("Downlevel(%s): %v", c, err)
			}
			if d.EffectiveCapture() > c {
				t.Fatalf("Downlevel(%s) left capture %s", c, d.EffectiveCapture())
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("Downlevel(%s) produced an invalid event: %v\n%s", c, err, b)
			}
		}
	})
}

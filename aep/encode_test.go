package aep

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/corpus"
)

// handEvents are events whose encoding takes the paths a corpus may not:
// strings to escape, HTML characters, U+2028, invalid UTF-8 in a
// subject that a synthesized prompt repeats, extensions, foreign types.
var handEvents = []string{
	`{"aep":"0.1","id":"01J0000000000000000000000A","type":"tool.requested","subject":"echo","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":0,"epoch":0,"capture":"full","aepmcpbridgeclient":"claude-code","data":{"tool":{"name":"echo","call_id":"17"},"args_digest":"sha256:00","args":{"message":"<b>&amp;</b>","n":1.50,"big":12345678901234567890},"args_redacted":{"message":"[redacted]"}}}`,
	`{"aep":"0.1","id":"01J0000000000000000000000B","type":"tool.completed","subject":"a\"b\\c\u2028d","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":1,"epoch":0,"cause":"01J0000000000000000000000A","capture":"full","data":{"tool":{"name":"e<>&cho"},"status":"success","duration_ms":3}}`,
	"{\"aep\":\"0.1\",\"id\":\"01J0000000000000000000000C\",\"type\":\"attention.requested\",\"subject\":\"bad \xff utf8 \\u0007\",\"time\":\"2026-01-02T03:04:05.000Z\",\"source\":\"aep://h/agent/a/session/s\",\"agent\":\"a\",\"session\":\"s\",\"seq\":2,\"epoch\":0,\"capture\":\"full\",\"data\":{\"kind\":\"choice\",\"prompt\":\"Deploy <prod>?\",\"options\":[{\"id\":\"yes\",\"label\":\"Yes & go\"},{\"id\":\"no\",\"label\":\"No\"}]}}",
	`{"aep":"0.1","id":"01J0000000000000000000000D","type":"attention.answered","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":3,"epoch":0,"capture":"full","data":{"request_id":"01J0000000000000000000000C","answer":{"values":{"a":"text","b":2,"c":true}}}}`,
	`{"aep":"0.1","id":"01J0000000000000000000000E","type":"x.acme.tool.thing","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":4,"epoch":0,"severity":"warning","capture":"full","zz":true,"aa":-3,"data":{ "free" : [1, 2, {"x":"y"}] }}`,
	`{"aep":"0.1","id":"01J0000000000000000000000F","type":"tool.failed","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":5,"epoch":0,"capture":"full","data":"not an object"}`,
	`{"aep":"0.1","id":"01J0000000000000000000000G","type":"control.attention.respond","time":"2026-01-02T03:04:05.000Z","source":"aep://o/operator/x","agent":"op","session":"s","capture":"full","data":{"request_id":"01J0000000000000000000000C","answer":{"values":{"a":"secret","b":2}}}}`,
	`{"aep":"0.1","id":"01J0000000000000000000000H","type":"progress.status","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":6,"epoch":0,"ext":{"not":"scalar"},"data":{"message":"x"}}`,
	`{"aep":"0.1","id":"01J0000000000000000000000J","type":"attention.answered","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":8,"epoch":0,"capture":"metadata","data":{"request_id":"01J0000000000000000000000C","answer":{"text":"above metadata"}}}`,
	`{"aep":"0.1","id":"01J0000000000000000000000I","type":"session.ended","time":"2026-01-02T03:04:05.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":7,"epoch":0,"capture":"metadata"}`,
}

// corpusEvents returns every JSON object with "aep" and "type" members
// found in the conformance fixtures, as encoded events.
func corpusEvents(t *testing.T) [][]byte {
	t.Helper()
	root := corpus.Fixture(t, ".")
	var out [][]byte
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["aep"]; ok {
				if _, ok := v["type"]; ok {
					b, err := json.Marshal(v)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, b)
				}
			}
			for _, mv := range v {
				walk(mv)
			}
		case []any:
			for _, it := range v {
				walk(it)
			}
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".jsonl")) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		for {
			var v any
			if err := dec.Decode(&v); err != nil {
				break // the end, or a file that is not JSON values
			}
			walk(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oldPath is how an emitter finished an event before DownlevelValid and
// Encode: Downlevel, then Validate, then json.Marshal.
func oldPath(ev Event, ceiling Capture) ([]byte, string) {
	ev, err := Downlevel(ev, ceiling)
	if err != nil {
		return nil, "downlevel: " + err.Error()
	}
	if err := ev.Validate(); err != nil {
		return nil, "validate: " + err.Error()
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, "encode: " + err.Error()
	}
	return b, ""
}

// newPath is the same with DownlevelValid and Encode.
func newPath(ev Event, ceiling Capture) ([]byte, string) {
	ev, err := DownlevelValid(ev, ceiling)
	if err != nil {
		var ve *ValidationError
		if asValidation(err, &ve) {
			return nil, "validate: " + err.Error()
		}
		return nil, "downlevel: " + err.Error()
	}
	b, err := ev.Encode()
	if err != nil {
		return nil, "encode: " + err.Error()
	}
	return b, ""
}

var ceilings = []Capture{0, CaptureNone, CaptureMetadata, CaptureRedacted, CaptureFull}

// sameModes checks that the payload checks pass or fail alike with and
// without paths (the quick run validatePayloadMap makes first), and
// reports whether ev's data was checked at all.
func sameModes(t *testing.T, name string, ev Event) bool {
	t.Helper()
	s, ok := payloads[ev.Type]
	m, err := decodeData(ev.Data)
	if !ok || err != nil || m == nil {
		return false
	}
	if quick, full := checkShape(s, m, noPath), checkShape(s, m, "data"); (quick == nil) != (full == nil) {
		t.Errorf("%s: checkShape without paths says %v, with paths %v", name, quick, full)
	}
	for _, c := range ceilings[1:] {
		if quick, full := aboveCapture(s, m, c, noPath), aboveCapture(s, m, c, "data"); (quick == "") != (full == "") {
			t.Errorf("%s at %s: aboveCapture without paths says %q, with paths %q", name, c, quick, full)
		}
	}
	return true
}

// sameBuiltEncoding checks that EncodeWithBuiltData gives Encode's bytes
// for ev when ev's data is given as EncodeBuilt gives it: compact, and
// HTML-escaped as json.Marshal escapes it. It reports whether ev encodes.
func sameBuiltEncoding(t *testing.T, name string, ev Event) bool {
	t.Helper()
	want, err := ev.Encode()
	if err != nil {
		return false
	}
	built := ev
	if len(ev.Data) > 0 {
		var compact bytes.Buffer
		if err := json.Compact(&compact, ev.Data); err != nil {
			return false
		}
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, compact.Bytes())
		built.Data = escaped.Bytes()
	}
	got, err := built.EncodeWithBuiltData()
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s: EncodeWithBuiltData\n got %s (%v)\nwant %s", name, got, err, want)
	}
	return true
}

// samePaths reports where the two paths differ for ev at any ceiling.
func samePaths(t *testing.T, name string, ev Event) (valid int) {
	t.Helper()
	for _, c := range ceilings {
		ob, oerr := oldPath(ev, c)
		nb, nerr := newPath(ev, c)
		if oerr != nerr || !bytes.Equal(ob, nb) {
			t.Errorf("%s at ceiling %d:\nold %q %s\nnew %q %s", name, c, ob, oerr, nb, nerr)
		}
		if oerr == "" {
			valid++
		}
	}
	return valid
}

// TestDownlevelValidEncodeMatchesTheOldPath: for every event of the
// conformance corpus and of handEvents, at every ceiling, DownlevelValid
// and Encode give byte for byte the encoding, or the very error, that
// Downlevel, Validate and json.Marshal gave.
func TestDownlevelValidEncodeMatchesTheOldPath(t *testing.T) {
	raws := corpusEvents(t)
	if len(raws) < 50 {
		t.Fatalf("found %d events in the corpus; want at least 50", len(raws))
	}
	for _, h := range handEvents {
		raws = append(raws, []byte(h))
	}
	events, valid, checked, built := 0, 0, 0, 0
	for i, raw := range raws {
		var ev Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			continue
		}
		events++
		name := string(raw[:min(len(raw), 120)]) + "…#" + string(rune('0'+i%10))
		valid += samePaths(t, name, ev)
		if sameModes(t, name, ev) {
			checked++
		}
		if sameBuiltEncoding(t, name, ev) {
			built++
		}
	}
	t.Logf("%d events encoded with their data as built", built)
	if built < 50 {
		t.Fatalf("only %d events encoded with their data as built; the comparison compares too little", built)
	}
	t.Logf("%d payloads checked with and without paths", checked)
	// Most must get through validation, so the bytes are compared, not
	// just the errors.
	t.Logf("%d events at %d ceilings each; %d (event, ceiling) pairs emitted, the rest refused alike", events, len(ceilings), valid)
	if valid < 100 {
		t.Fatalf("only %d (event, ceiling) pairs got through validation; the comparison compares too little", valid)
	}
}

// TestEncodeEscapesAsMarshal pins the HTML escaping json.Marshal applies
// and Encode must repeat.
func TestEncodeEscapesAsMarshal(t *testing.T) {
	ev := Event{AEP: Version, ID: "x", Type: "progress.status", Subject: "<a & b>\u2028\u2029", Time: "t", Source: "s:", Agent: "a",
		Data: json.RawMessage(`{"message":"<i>&\u2028"}`)}
	got, err := ev.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"aep":"0.1","id":"x","type":"progress.status","subject":"\u003ca \u0026 b\u003e\u2028\u2029","time":"t","source":"s:","agent":"a","data":{"message":"\u003ci\u003e\u0026\u2028"}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func FuzzDownlevelValidEncode(f *testing.F) {
	for _, h := range handEvents {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev Event
		if json.Unmarshal(raw, &ev) != nil {
			return
		}
		samePaths(t, "fuzzed event", ev)
		sameModes(t, "fuzzed event", ev)
		sameBuiltEncoding(t, "fuzzed event", ev)
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b", "a\\b", "\x00\x1f\x7f", "<>&", "\u2028\u2029", "\xff\xfe", "é日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := marshalNoEscape(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendString([]byte("pre"), s)
		if err != nil || string(got) != "pre"+string(want) {
			t.Fatalf("appendString(%q) = %q, %v; want pre%s", s, got, err, want)
		}
	})
}

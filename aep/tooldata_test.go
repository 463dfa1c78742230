package aep

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The structs the tool.* payloads were encoded from before they encoded
// themselves: encoding/json's output for them is what the hand-written
// encoders must reproduce.
type (
	refStruct struct {
		Name   string `json:"name"`
		CallID string `json:"call_id,omitempty"`
	}
	requestedStruct struct {
		Tool       refStruct `json:"tool"`
		ArgsDigest string    `json:"args_digest,omitempty"`
	}
	completedStruct struct {
		Tool       refStruct `json:"tool"`
		Status     string    `json:"status"`
		DurationMS int64     `json:"duration_ms"`
	}
	failedStruct struct {
		Tool  refStruct `json:"tool"`
		Error struct {
			Type string `json:"type,omitempty"`
		} `json:"error"`
		DurationMS int64 `json:"duration_ms"`
	}
	deniedStruct struct {
		Tool refStruct `json:"tool"`
		By   string    `json:"by"`
		Rule string    `json:"rule,omitempty"`
	}
)

// toolPair is one hand-encoded payload and its struct twin.
type toolPair struct {
	typ     string
	built   any
	struct_ any
}

// toolPairs builds every tool.* payload from the same strings and number.
func toolPairs(name, callID, s1, s2 string, n int64) []toolPair {
	ref := ToolRef{Name: name, CallID: callID}
	sref := refStruct{Name: name, CallID: callID}
	failed := failedStruct{Tool: sref, DurationMS: n}
	failed.Error.Type = s1
	by := "policy"
	if n%3 == 1 {
		by = "user_setting"
	} else if n%3 == 2 {
		by = s1 // usually outside the enum: the generic path must refuse it
	}
	return []toolPair{
		{"tool.requested", ToolRequested{Tool: ref, ArgsDigest: s1}, requestedStruct{Tool: sref, ArgsDigest: s1}},
		{"tool.completed", ToolCompleted{Tool: ref, Status: s2, DurationMS: n}, completedStruct{Tool: sref, Status: s2, DurationMS: n}},
		{"tool.failed", ToolFailed{Tool: ref, ErrorType: s1, DurationMS: n}, failed},
		{"tool.denied", ToolDenied{Tool: ref, By: by, Rule: s2}, deniedStruct{Tool: sref, By: by, Rule: s2}},
	}
}

var captures = []Capture{0, CaptureNone, CaptureMetadata, CaptureRedacted, CaptureFull}

// checkToolPair checks that a hand-encoded payload encodes, for every
// draft capture and ceiling, to the bytes the generic path gives (the
// struct's json.Marshal, down-leveled and validated), that it takes
// nothing the generic path refuses, and declines only what does not fit.
func checkToolPair(t *testing.T, p toolPair) {
	t.Helper()
	want, err := json.Marshal(p.struct_)
	if err != nil {
		t.Fatalf("%s: json.Marshal of the struct: %v", p.typ, err)
	}
	got, err := json.Marshal(p.built)
	if err != nil {
		t.Fatalf("%s: json.Marshal: %v", p.typ, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: MarshalJSON\n got %s\nwant %s", p.typ, got, want)
	}
	for _, in := range captures {
		for _, ceiling := range captures {
			ev := Event{AEP: Version, ID: "01J0000000000000000000000A", Type: p.typ, Subject: "s",
				Time: "2026-01-02T03:04:05.000Z", Source: "aep://h/agent/a/session/s", Agent: "a", Session: "s",
				Seq: Int64(0), Epoch: Int64(0), Capture: in, Data: want}
			if ev.Capture == 0 {
				ev.Capture = CaptureMetadata
			}
			generic, gerr := DownlevelValid(ev, ceiling)
			data, capture, ok := EncodeBuilt([]byte("prefix"), p.typ, p.built, in, ceiling)
			if !ok {
				// Declining is always safe (the generic path decides), but
				// only data that does not fit, or a draft at none, is declined.
				if p.built.(builtData).fits() && in != CaptureNone {
					t.Errorf("%s at %s under %s: EncodeBuilt declined data that fits: %s", p.typ, in, ceiling, want)
				}
				continue
			}
			if gerr != nil {
				t.Errorf("%s at %s under %s: EncodeBuilt took data the generic path refuses (%v): %s", p.typ, in, ceiling, gerr, want)
				continue
			}
			if capture == CaptureNone {
				if data != nil || generic.Data != nil {
					t.Errorf("%s at %s under none: data %q, generic %q; want none", p.typ, in, data, generic.Data)
				}
			} else if !bytes.HasPrefix(data, []byte("prefix")) || !bytes.Equal(data[len("prefix"):], generic.Data) {
				t.Errorf("%s at %s under %s:\n got %s\nwant prefix%s", p.typ, in, ceiling, data, generic.Data)
			}
			if capture != generic.Capture {
				t.Errorf("%s at %s under %s: capture %s, generic %s", p.typ, in, ceiling, capture, generic.Capture)
			}
			built := ev
			built.Capture, built.Data = capture, nil
			if capture != CaptureNone {
				built.Data = data[len("prefix"):]
			}
			if _, err := ValidBuilt(built); err != nil {
				t.Errorf("%s at %s under %s: ValidBuilt: %v", p.typ, in, ceiling, err)
			}
			if err := built.Validate(); err != nil {
				t.Errorf("%s at %s under %s: the built event does not validate: %v", p.typ, in, ceiling, err)
			}
			// The whole event encodes as the generic path's does, with
			// a subject that HTML escaping changes or not.
			for _, subject := range []string{"s", "a<b>&c\u2028\xff"} {
				b, g := built, generic
				b.Subject, g.Subject = subject, subject
				want, werr := g.Encode()
				got, err := b.EncodeWithBuiltData()
				if err != nil || werr != nil || !bytes.Equal(got, want) {
					t.Errorf("%s at %s under %s, subject %q: EncodeWithBuiltData\n got %s (%v)\nwant %s (%v)", p.typ, in, ceiling, subject, got, err, want, werr)
				}
			}
		}
	}
}

func TestToolDataEncodesAsTheGenericPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, callID, s1, s2 string
		n                    int64
	}{
		{"echo", "17", "sha256:00ff", "success", 3},
		{"echo", "", "", "", 0},
		{"e<>&cho", `"quoted" \ id`, "jsonrpc_error", "tool_error", -1},
		{"a\u2028b\u2029c", "\x00\x1f\t\n", "policy", "r1", 1},
		{"bad \xff utf8", "\xc3", "\xed\xa0\x80", "ünïcödé", 2},
		{"", "", "runtime", "", 1 << 62},
	}
	for _, c := range cases {
		for _, p := range toolPairs(c.name, c.callID, c.s1, c.s2, c.n) {
			checkToolPair(t, p)
		}
	}
}

func TestEncodeBuiltDeclinesOtherData(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ  string
		data any
	}{
		{"tool.requested", map[string]any{"tool": map[string]any{"name": "x"}}},
		{"tool.completed", ToolRequested{Tool: ToolRef{Name: "x"}}}, // a payload of another type
		{"x.acme.thing", ToolCompleted{}},
		{"tool.denied", ToolDenied{Tool: ToolRef{Name: "x"}, By: "someone"}},
		{"tool.requested", nil},
	} {
		if out, _, ok := EncodeBuilt([]byte("keep"), c.typ, c.data, CaptureFull, CaptureMetadata); ok || string(out) != "keep" {
			t.Errorf("EncodeBuilt(%s, %T) = %q, %v; want it declined with dst untouched", c.typ, c.data, out, ok)
		}
	}
}

func TestLanding(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, ceiling, want Capture }{
		{CaptureFull, CaptureFull, CaptureFull},
		{CaptureFull, CaptureRedacted, CaptureMetadata},
		{CaptureFull, CaptureMetadata, CaptureMetadata},
		{CaptureFull, CaptureNone, CaptureNone},
		{CaptureRedacted, CaptureRedacted, CaptureRedacted},
		{CaptureRedacted, CaptureMetadata, CaptureMetadata},
		{CaptureMetadata, CaptureFull, CaptureMetadata},
		{0, 0, CaptureMetadata},
		{CaptureFull, 0, CaptureMetadata},
	} {
		if got := Landing(c.in, c.ceiling); got != c.want {
			t.Errorf("Landing(%s, %s) = %s; want %s", c.in, c.ceiling, got, c.want)
		}
	}
}

// FuzzToolData holds the hand-written encoders to the generic path for
// any strings a peer may put in a tool's name or a call's id.
func FuzzToolData(f *testing.F) {
	f.Add("echo", "17", "sha256:00", "success", int64(3))
	f.Add("e<>&cho", "\"x\"", "\u2028", "\xff", int64(-7))
	f.Add("", "", "policy", "", int64(2))
	f.Fuzz(func(t *testing.T, name, callID, s1, s2 string, n int64) {
		for _, p := range toolPairs(name, callID, s1, s2, n) {
			checkToolPair(t, p)
		}
	})
}

// TestPayloadTypesAreCoreTypes holds CheckType's shortcut for the payload
// table's types to the grammar: each of them passes it.
func TestPayloadTypesAreCoreTypes(t *testing.T) {
	t.Parallel()
	for typ := range payloads {
		if err := checkTypeSyntax(typ); err != nil {
			t.Errorf("the payload table's type %q fails the type grammar: %v", typ, err)
		}
	}
	if err := CheckType("tool.bogus_category.x"); err != nil {
		t.Errorf("CheckType(tool.bogus_category.x): %v; want nil (tool is a category)", err)
	}
	if err := CheckType("nosuchcategory.requested"); err == nil {
		t.Error("CheckType(nosuchcategory.requested) = nil; want the closed category set to refuse it")
	}
}

// TestLevelNamesEncodeAsJSON holds the levels' hand-quoted encodings to
// encoding/json's encoding of their names.
func TestLevelNamesEncodeAsJSON(t *testing.T) {
	t.Parallel()
	for c := range captureNames {
		got, err := c.MarshalJSON()
		want, _ := json.Marshal(captureNames[c])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Capture(%d).MarshalJSON() = %s, %v; want %s", c, got, err, want)
		}
	}
	for s := range severityNames {
		got, err := s.MarshalJSON()
		want, _ := json.Marshal(severityNames[s])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Severity(%d).MarshalJSON() = %s, %v; want %s", s, got, err, want)
		}
	}
}

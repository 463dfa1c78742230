package elicit

import (
	"bytes"
	"encoding/json"
	"testing"
)

// checkToolParams holds readToolParams to json.Unmarshal into toolParams,
// the reader it stands in for, and says whether the scan read raw itself.
func checkToolParams(t *testing.T, raw []byte) (scanned bool) {
	t.Helper()
	var want toolParams
	werr := json.Unmarshal(raw, &want)
	got, gerr := readToolParams(raw)
	if (gerr != nil) != (werr != nil) {
		t.Fatalf("readToolParams(%q) error %v; json.Unmarshal's %v", raw, gerr, werr)
	}
	if werr != nil {
		return false
	}
	if (got.Name == nil) != (want.Name == nil) || got.Name != nil && *got.Name != *want.Name {
		t.Fatalf("readToolParams(%q) name %s; json.Unmarshal's %s", raw, show(got.Name), show(want.Name))
	}
	if !bytes.Equal(got.Arguments, want.Arguments) || (got.Arguments == nil) != (want.Arguments == nil) {
		t.Fatalf("readToolParams(%q) arguments %q; json.Unmarshal's %q", raw, got.Arguments, want.Arguments)
	}
	if len(raw) > 0 && len(got.Arguments) > 0 && &got.Arguments[0] == &raw[bytes.Index(raw, got.Arguments)] {
		t.Fatalf("readToolParams(%q) arguments share the frame's bytes; want a copy", raw)
	}
	_, scanned = scanToolParams(raw)
	return scanned
}

func show(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

var toolParamsSeeds = []string{
	`{"name":"echo","arguments":{"message":"ping"}}`,
	` { "arguments" : [1, {"a":"}]"}] , "name" : "x" , "other": {"name":"inner"} } `,
	`{"NAME":"upper","Arguments":"s"}`,
	`{"name":"a","name":"b"}`,
	`{"name":null}`,
	`{"name":"x","arguments":null}`,
	`{"name":1}`,
	`{"name":"esc\"aped"}`,
	`{"n\u0061me":"escaped key"}`,
	"{\"name\":\"bad \xff\"}",
	`{"name":"ünï"}`,
	`{"argumentſ":{}, "name":"long s"}`,
	`{"name":"x","arguments":12.5e3}`,
	`{"name":"x","arguments":true}`,
	`{}`,
	`[]`,
	`null`,
	`"name"`,
	``,
	`{"name":"x"`,
	`{"name":"x","arguments":{"a":[{"b":"\\"}"}]}}`,
}

func TestReadToolParamsIsJSONUnmarshal(t *testing.T) {
	t.Parallel()
	scanned := 0
	for _, s := range toolParamsSeeds {
		if checkToolParams(t, []byte(s)) {
			scanned++
		}
	}
	// The common shapes take the scan; without this the test would pass
	// with a scan that always declines.
	for _, s := range []string{toolParamsSeeds[0], toolParamsSeeds[1], toolParamsSeeds[2], toolParamsSeeds[3], toolParamsSeeds[12], `{}`} {
		if _, ok := scanToolParams([]byte(s)); !ok {
			t.Errorf("scanToolParams(%s) declined; want it read by the scan", s)
		}
	}
	if scanned == 0 {
		t.Error("no seed was read by the scan")
	}
}

// FuzzReadToolParams holds the scan to json.Unmarshal for any params a
// client sends.
func FuzzReadToolParams(f *testing.F) {
	for _, s := range toolParamsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkToolParams(t, raw)
	})
}

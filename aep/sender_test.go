package aep

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSenderFrames(t *testing.T) {
	t.Parallel()
	cmd := &Event{ID: "C1", Source: "aep://h/agent/op"}
	b, _ := json.Marshal(NewSender(cmd, "alice", []string{"sre", "db"}, true))
	s, ok := DecodeSender(b)
	if !ok || s.Cause != "C1" || s.Source != cmd.Source || s.By != "alice" || strings.Join(s.Groups, ",") != "sre,db" || !s.ReadOnly || IsEventType(s.Type) {
		t.Fatalf("round trip: %+v %v; want alice's read-only sender frame of C1 with her groups sre and db, a frame (no dot)", s, ok)
	}
	for _, bad := range []string{`{}`, `{"type":"aep-mcp-bridge-sender","cause":"C1"}`, `{"type":"hello","cause":"C1","by":"x"}`, `[]`} {
		if _, ok := DecodeSender([]byte(bad)); ok {
			t.Errorf("DecodeSender(%s) accepted it", bad)
		}
	}
	exp := WithSenders(json.RawMessage(`{"resume-secret":"s"}`))
	if !AdvertisesSenders(exp) || AdvertisesSenders(json.RawMessage(`{"aep-mcp-bridge-senders":{"versions":[2]}}`)) || AdvertisesSenders(nil) {
		t.Errorf("advertisement: %s", exp)
	}
	var m map[string]any
	if json.Unmarshal(exp, &m) != nil || m["resume-secret"] != "s" {
		t.Errorf("WithSenders dropped a member: %s", exp)
	}
}

// FuzzDecodeSender: a frame from the hub decodes into a sender frame that
// names a command and a sender, or is refused; nothing panics.
func FuzzDecodeSender(f *testing.F) {
	f.Add([]byte(`{"type":"aep-mcp-bridge-sender","cause":"C1","source":"s","by":"alice","read_only":true}`))
	f.Add([]byte(`{"type":"aep-mcp-bridge-sender","cause":"","by":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := DecodeSender(b)
		if ok && (s.Type != FrameSender || s.Cause == "" || s.By == "") {
			t.Fatalf("accepted %q as %+v", b, s)
		}
	})
}

package logcheck

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// line builds one valid event line of session s1.
func line(t *testing.T, id string, seq int64, typ, subject string, capture aep.Capture, data any) []byte {
	t.Helper()
	ev := aep.Event{AEP: aep.Version, ID: id, Type: typ, Subject: subject, Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/a/session/s1", Agent: "a", Session: "s1", Seq: aep.Int64(seq), Epoch: aep.Int64(0), Capture: capture}
	if data != nil {
		ev.Data, _ = json.Marshal(data)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBytes(t *testing.T) {
	const q = "01J00000000000000000000001"
	started := func(t *testing.T) []byte {
		return line(t, "01J00000000000000000000000", 0, "session.started", "", aep.CaptureMetadata, nil)
	}
	requested := func(t *testing.T, seq int64, prompt string) []byte {
		return line(t, q, seq, "attention.requested", "srv", aep.CaptureMetadata,
			aep.AttentionRequested{Kind: "form", Prompt: prompt, Fields: []aep.FieldSpec{{ID: "x", Type: "string", Label: "x"}}})
	}
	resolved := func(t *testing.T, id string, seq int64) []byte {
		return line(t, id, seq, "attention.resolved", q, aep.CaptureMetadata, aep.AttentionResolved{Resolution: "dismissed"})
	}
	ended := func(t *testing.T, id string, seq int64) []byte {
		return line(t, id, seq, "session.ended", "", aep.CaptureMetadata, map[string]any{"reason": "normal"})
	}
	tests := []struct {
		name    string
		lines   func(t *testing.T) [][]byte
		wantErr string // "" means the log is valid
	}{
		{"a whole session", func(t *testing.T) [][]byte {
			return [][]byte{started(t), requested(t, 1, "a requests input (1 field)"), resolved(t, "01J00000000000000000000002", 2), ended(t, "01J00000000000000000000003", 3)}
		}, ""},
		{"seq goes back", func(t *testing.T) [][]byte {
			return [][]byte{started(t), requested(t, 1, "a requests input (1 field)"), resolved(t, "01J00000000000000000000002", 1)}
		}, "does not increase"},
		{"an id twice", func(t *testing.T) [][]byte {
			return [][]byte{started(t), line(t, "01J00000000000000000000000", 1, "session.started", "", aep.CaptureMetadata, nil)}
		}, "appears twice"},
		{"ended with a question open", func(t *testing.T) [][]byte {
			return [][]byte{started(t), requested(t, 1, "a requests input (1 field)"), ended(t, "01J00000000000000000000003", 2)}
		}, "still pending"},
		{"two terminals", func(t *testing.T) [][]byte {
			return [][]byte{started(t), requested(t, 1, "a requests input (1 field)"), resolved(t, "01J00000000000000000000002", 2), resolved(t, "01J00000000000000000000004", 3)}
		}, "a second terminal"},
		{"free text at metadata", func(t *testing.T) [][]byte {
			return [][]byte{started(t), requested(t, 1, "deploy to prod?")}
		}, "not synthesized from structure"},
		{"not an event", func(t *testing.T) [][]byte {
			return [][]byte{started(t), []byte(`{"half":`), ended(t, "01J00000000000000000000003", 2)}
		}, "the log:2: "},
		{"a torn last line is skipped", func(t *testing.T) [][]byte {
			return [][]byte{started(t), ended(t, "01J00000000000000000000003", 2), []byte(`{"aep":"0.1","id":"01J000`)}
		}, ""},
		{"a gap record", func(t *testing.T) [][]byte {
			return [][]byte{started(t), []byte(`{"aep":"0.1","id":"01J00000000000000000000009","type":"agent.health","time":"2026-01-01T00:00:00.000Z",` +
				`"source":"aep://h/agent/a/session/s1","agent":"a","severity":"warning","data":{"status":"degraded","log_gap":{"lost":1,"first_seq":1,"last_seq":1,"since":"t","until":"t","error":"no space left on device"}}}`),
				ended(t, "01J00000000000000000000003", 3)}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Bytes(bytes.Join(tt.lines(t), []byte("\n")))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got %v; want a valid log", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v; want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

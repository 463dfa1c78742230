package bus

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// TestAnEventOverTheBoundIsNeverEmitted: Emit refuses an event whose
// encoding is over MaxEvent whole: no sink sees it and its seq is not
// used, and EmitWithin applies a tighter bound the same way.
func TestAnEventOverTheBoundIsNeverEmitted(t *testing.T) {
	hub := NewHub()
	em, err := NewEmitter(EmitterOptions{Agent: "a", Session: "s", Sinks: []Sink{hub}, MaxEvent: 4096, Capture: aep.CaptureFull})
	if err != nil {
		t.Fatal(err)
	}
	status := func(n int) aep.Draft {
		return aep.Draft{Type: "progress.status", Capture: aep.CaptureFull, Data: map[string]string{"message": strings.Repeat("x", n)}}
	}
	tests := []struct {
		name string
		emit func() (aep.Event, []byte, error)
		max  int64
	}{
		{"over MaxEvent", func() (aep.Event, []byte, error) { return em.Emit(status(5000)) }, 4096},
		{"over a tighter bound", func() (aep.Event, []byte, error) { return em.EmitWithin(status(1000), 512) }, 512},
		{"a looser bound is MaxEvent", func() (aep.Event, []byte, error) { return em.EmitWithin(status(5000), 1<<30) }, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tt.emit()
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.Max != tt.max || tl.Size <= tt.max || tl.Type != "progress.status" {
				t.Fatalf("got %v; want a *TooLargeError over %d bytes", err, tt.max)
			}
			if strings.Contains(err.Error(), "xxxx") {
				t.Fatalf("the error quotes the event: %q", err)
			}
		})
	}
	if st := hub.Stats(); st.ReplayEvents != 0 {
		t.Fatalf("the hub holds %d events; want none", st.ReplayEvents)
	}
	ev, _, err := em.Emit(status(10))
	if err != nil || *ev.Seq != 0 {
		t.Fatalf("the next event: seq %v, %v; want seq 0, the refused ones used none", ev.Seq, err)
	}
}

// TestSessionExtensions: the emitter's extension attributes are on every
// event it emits, over a draft's own of the same name, at every capture
// level, and not on the foreign events it records; a bad one is refused
// when the emitter is made.
func TestSessionExtensions(t *testing.T) {
	hub := NewHub()
	em, err := NewEmitter(EmitterOptions{Agent: "a", Session: "s", Sinks: []Sink{hub}, Extensions: map[string]any{aep.ExtClient: "ci"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []aep.Draft{
		{Type: "session.started", Capture: aep.CaptureMetadata},
		{Type: "progress.status", Capture: aep.CaptureFull, Extensions: map[string]any{aep.ExtClient: "forged", "other": 1}, Data: map[string]string{"message": "m"}},
	} {
		ev, raw, err := em.Emit(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(ev.Extensions[aep.ExtClient]); got != `"ci"` || !strings.Contains(string(raw), `"`+aep.ExtClient+`":"ci"`) {
			t.Errorf("%s carries %s %s; want \"ci\"\n%s", d.Type, aep.ExtClient, got, raw)
		}
	}
	cmd := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Source: "aep://op/agent/x", Agent: "x", Time: aep.FormatTime(time.Now()), Capture: aep.CaptureMetadata,
		Session: "s", Subject: "q", Data: json.RawMessage(`{"answer":{"option":"cancel"}}`)}
	if ev, _, err := em.Record(cmd); err != nil || ev.Extensions[aep.ExtClient] != nil {
		t.Errorf("a recorded command: %v, extensions %v; want none of the session's", err, ev.Extensions)
	}
	for name, v := range map[string]any{"Bad-Name": "x", "type": "x", aep.ExtClient: []string{"x"}} {
		if _, err := NewEmitter(EmitterOptions{Agent: "a", Session: "s", Extensions: map[string]any{name: v}}); err == nil {
			t.Errorf("extension %s = %v: no error", name, v)
		}
	}
}

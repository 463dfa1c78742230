package attention

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// TestLateAnswersAreRecordedAsLost: every answer is on the bus, the one
// that lost too, as TypeOutraced with who sent it, how the question had
// ended, and the winning event; never as a second attention.answered.
// At the metadata level it carries structural values only: free text and
// secrets are left out.
func TestLateAnswersAreRecordedAsLost(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"why":{"type":"string"},"password":{"type":"string"}}}`)
	tests := []struct {
		name       string
		settle     func(m *Manager, id string)
		late       func(m *Manager, id string) (reason, detail string)
		want       Outraced
		wantReason string
		wantDetail string
	}{
		{
			name: "the client answers after an operator won",
			settle: func(m *Manager, id string) {
				operator(m, id, aep.Answer{Values: map[string]any{"n": json.Number("1")}})
			},
			late: func(m *Manager, id string) (string, string) {
				if m.ClientAnswered(id, "ide", json.RawMessage(`{"action":"accept","content":{"n":2,"why":"free text","password":"hunter22"}}`)) {
					t.Error("the late client won")
				}
				return "", ""
			},
			want: Outraced{Answer: aep.Answer{Values: map[string]any{"n": json.Number("2")}}, By: "ide", Via: "oob", Resolution: "answered", WonBy: "operator"},
		},
		{
			name: "an operator answers after the client won",
			settle: func(m *Manager, id string) {
				m.ClientAnswered(id, "ide", json.RawMessage(`{"action":"decline"}`))
			},
			late: func(m *Manager, id string) (string, string) {
				return operator(m, id, aep.Answer{Option: "cancel"})
			},
			want:       Outraced{Answer: aep.Answer{Option: "cancel"}, By: "operator", Via: "control", Resolution: "answered", WonBy: "ide"},
			wantReason: aep.ReasonRefused,
			wantDetail: "was already answered by ide; this answer lost the race and was not applied",
		},
		{
			name:   "an operator answers after a dismissal",
			settle: func(m *Manager, id string) { m.Dismiss(id) },
			late: func(m *Manager, id string) (string, string) {
				return operator(m, id, aep.Answer{Values: map[string]any{"n": json.Number("3")}})
			},
			want:       Outraced{Answer: aep.Answer{Values: map[string]any{"n": json.Number("3")}}, By: "operator", Via: "control", Resolution: "dismissed"},
			wantReason: aep.ReasonRefused,
			wantDetail: "was already dismissed; this answer was not applied",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub := &memPub{}
			m := NewManager(ManagerOptions{Agent: "a", Publisher: pub})
			defer m.Close()
			f, err := translate.Parse("n?", schema)
			if err != nil {
				t.Fatal(err)
			}
			id, err := m.Raise(Spec{Form: f, Subject: "srv", RespondVia: []string{"control", "oob"}, Deliver: func(Resolution) {}})
			if err != nil {
				t.Fatal(err)
			}
			tt.settle(m, id)
			terminal := pub.evs[len(pub.evs)-1]
			winner := terminal.ID
			if tt.want.Resolution == "answered" {
				winner = pub.evs[len(pub.evs)-2].ID // attention.answered, before attention.resolved
			}
			reason, detail := tt.late(m, id)
			last := pub.evs[len(pub.evs)-1]
			if last.Type != TypeOutraced || last.Subject != id || last.Capture != aep.CaptureMetadata {
				t.Fatalf("last event %s subject %s capture %v; want %s about %s at metadata", last.Type, last.Subject, last.Capture, TypeOutraced, id)
			}
			var got Outraced
			dec := json.NewDecoder(bytes.NewReader(last.Data))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			tt.want.LostTo = winner
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outraced (-want +got):\n%s", diff)
			}
			if reason != tt.wantReason || !strings.Contains(detail, tt.wantDetail) {
				t.Errorf("ack %q %q; want %q with %q", reason, detail, tt.wantReason, tt.wantDetail)
			}
		})
	}
}

// operator answers question id as an operator and returns the ack.
func operator(m *Manager, id string, a aep.Answer) (reason, detail string) {
	m.Respond(aep.Event{ID: aep.NewID(), Type: "control.attention.respond", Subject: id, Agent: "operator"}, a, "operator", func(r, d string) error {
		reason, detail = r, d
		return nil
	})
	return reason, detail
}

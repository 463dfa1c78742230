package attention

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

func TestGateValuesSecret(t *testing.T) {
	fields := []aep.FieldSpec{{ID: "password", Type: "string", Secret: true}, {ID: "pin", Type: "number", Secret: true},
		{ID: "user", Type: "string"}, {ID: "n", Type: "number"}}
	values := map[string]any{"password": "s3cretpass", "pin": json.Number("1234"), "user": "ada", "n": json.Number("3")}
	tests := []struct {
		name    string
		ceiling aep.Capture
		want    map[string]any
	}{
		{"metadata", aep.CaptureMetadata, map[string]any{"n": json.Number("3")}},
		{"redacted", aep.CaptureRedacted, map[string]any{"password": aep.RedactedSecret, "pin": aep.RedactedSecret, "user": "ada", "n": json.Number("3")}},
		{"full", aep.CaptureFull, map[string]any{"password": aep.RedactedSecret, "pin": aep.RedactedSecret, "user": "ada", "n": json.Number("3")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, GateValues(fields, values, tt.ceiling, nil)); diff != "" {
				t.Fatalf("gated values (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSecretAnswersNeverPublished: an operator's answer, a scripted one and
// the client's own all reach the server (Deliver) with the real value,
// while every event, at full, shows the placeholder.
func TestSecretAnswersNeverPublished(t *testing.T) {
	for _, via := range []string{"control", "oob"} {
		t.Run(via, func(t *testing.T) {
			pub := &memPub{}
			m := NewManager(ManagerOptions{Agent: "a", Publisher: pub, Timeout: time.Minute, Ceiling: aep.CaptureFull})
			got := make(chan Resolution, 1)
			id, err := m.Raise(Spec{Form: constraintsForm(t), Subject: "srv", RespondVia: []string{"control", "oob"}, Deliver: func(r Resolution) { got <- r }})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			values := map[string]any{"user": "ada@example.com", "password": "s3cretpass"}
			if via == "control" {
				var nack string
				m.Respond(aep.Event{ID: "cmd", Subject: id, Agent: "op"}, aep.Answer{Values: values}, "op", func(_, d string) error { nack = d; return nil })
				if nack != "" {
					t.Fatalf("rejected: %s", nack)
				}
				if r := <-got; r.Decision.Content["password"] != "s3cretpass" {
					t.Fatalf("the server must get the real value: %v", r.Decision.Content)
				}
			} else if !m.ClientAnswered(id, "ide", json.RawMessage(`{"action":"accept","content":{"user":"ada@example.com","password":"s3cretpass"}}`)) {
				t.Fatal("client answer lost")
			}
			for _, ev := range pub.evs {
				if strings.Contains(string(ev.Data), "s3cretpass") || strings.Contains(string(ev.Data), "hunter22") {
					t.Fatalf("%s publishes the secret: %s", ev.Type, ev.Data)
				}
			}
			var ans aep.AttentionAnswered
			for _, ev := range pub.evs {
				if ev.Type == "attention.answered" {
					json.Unmarshal(ev.Data, &ans)
				}
			}
			if ans.Answer.Values["password"] != aep.RedactedSecret || ans.Answer.Values["user"] != "ada@example.com" {
				t.Fatalf("attention.answered values at full: %v", ans.Answer.Values)
			}
		})
	}
}

// TestRecordedAnswer: a command's answer is recorded as attention.answered
// would carry it at the ceiling: secrets as the placeholder at every level,
// free text only at redacted or above, keys with no field dropped; a
// question that is no longer pending keeps no values at all.
func TestRecordedAnswer(t *testing.T) {
	f, err := translate.Parse("m", json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","writeOnly":true},"user":{"type":"string"},"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	answer := aep.Answer{Values: map[string]any{"code": "hunter2", "user": "ann@example.com", "n": json.Number("3"), "extra": "x"}}
	tests := []struct {
		name    string
		ceiling aep.Capture
		settle  bool
		want    aep.Answer
	}{
		{"full", aep.CaptureFull, false, aep.Answer{Values: map[string]any{"code": aep.RedactedSecret, "user": "ann@example.com", "n": json.Number("3")}}},
		{"redacted", aep.CaptureRedacted, false, aep.Answer{Values: map[string]any{"code": aep.RedactedSecret, "user": "[REDACTED:pii]", "n": json.Number("3")}}},
		{"metadata", aep.CaptureMetadata, false, aep.Answer{Values: map[string]any{"n": json.Number("3")}}},
		{"settled", aep.CaptureFull, true, aep.Answer{Values: map[string]any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager(ManagerOptions{Agent: "a", Publisher: &memPub{}, Timeout: time.Minute, Ceiling: tt.ceiling})
			defer m.Close()
			id, err := m.Raise(Spec{Form: f, RespondVia: []string{"control"}, Deliver: func(Resolution) {}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.settle {
				m.Dismiss(id)
			}
			if diff := cmp.Diff(tt.want, m.RecordedAnswer(id, answer)); diff != "" {
				t.Fatalf("recorded answer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRejectionNamesRuleNotAnswer: the nack detail for a secret field names
// the field and the rule, never the value.
func TestRejectionNamesRuleNotAnswer(t *testing.T) {
	m := NewManager(ManagerOptions{Agent: "a", Publisher: &memPub{}, Timeout: time.Minute})
	defer m.Close()
	id, _ := m.Raise(Spec{Form: constraintsForm(t), RespondVia: []string{"control"}, Deliver: func(Resolution) {}})
	var detail string
	m.Respond(aep.Event{ID: "c", Subject: id}, aep.Answer{Values: map[string]any{"user": "ada@example.com", "password": "s3cret"}},
		"op", func(_, d string) error { detail = d; return nil })
	if want := `field "password": minLength: must be at least 8 characters`; detail != want {
		t.Fatalf("detail: got %q; want %q", detail, want)
	}
}

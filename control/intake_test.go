package control

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// memEmitter records what the intake emits.
type memEmitter struct {
	mu       sync.Mutex
	seq      int64
	emitted  []aep.Event
	recorded []aep.Event
	resent   [][]byte
}

func (m *memEmitter) Emit(d aep.Draft) (aep.Event, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, _ := json.Marshal(d.Data)
	if d.Data == nil {
		data = nil
	}
	ev := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: d.Type, Cause: d.Cause, Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/b/session/s1", Agent: "b", Session: "s1", Seq: aep.Int64(m.seq), Capture: d.Capture, Data: data}
	m.seq++
	raw, err := json.Marshal(ev)
	m.emitted = append(m.emitted, ev)
	return ev, raw, err
}

func (m *memEmitter) Record(ev aep.Event) (aep.Event, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recorded = append(m.recorded, ev)
	raw, err := json.Marshal(ev)
	return ev, raw, err
}

func (m *memEmitter) Resend(ev aep.Event, raw []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resent = append(m.resent, raw)
}

func (m *memEmitter) Session() string { return "s1" }

// target accepts option "yes", rejects everything else as invalid.
type target struct{ calls int }

func (t *target) Respond(cmd aep.Event, a aep.Answer, ack AckFunc) {
	t.calls++
	if a.Option == "yes" {
		ack("", "")
		return
	}
	ack(aep.ReasonInvalid, "option must be yes; token=abcd1234secret")
}

func cmd(id, typ, session string, answer aep.Answer) aep.Event {
	data, _ := json.Marshal(aep.Respond{Answer: answer})
	return aep.Event{AEP: aep.Version, ID: id, Type: typ, Subject: "Q1", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/op", Agent: "op", Session: session, Data: data}
}

func TestIntake(t *testing.T) {
	tests := []struct {
		name       string
		cmd        aep.Event
		sender     Sender
		wantRefuse string
		wantType   string
		wantReason string
	}{
		{"accepted", cmd("c1", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{true}, "", "control.accepted", ""},
		{"rejected by the target", cmd("c2", "control.attention.respond", "s1", aep.Answer{Option: "no"}), Sender{true}, "", "control.rejected", "invalid"},
		{"unsupported command", cmd("c3", "control.pause", "s1", aep.Answer{}), Sender{true}, "", "control.rejected", "unsupported"},
		{"unauthenticated", cmd("c4", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{false}, "unauthorized", "", ""},
		{"another session", cmd("c5", "control.attention.respond", "s2", aep.Answer{Option: "yes"}), Sender{true}, "no-route", "", ""},
		{"no id", cmd("", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{true}, "invalid", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em, tg := &memEmitter{}, &target{}
			in := NewIntake(IntakeOptions{Emitter: em, Target: tg})
			res, err := in.Submit(tt.cmd, tt.sender)
			if tt.wantRefuse != "" {
				var re *RefusalError
				if !errors.As(err, &re) || re.Code != tt.wantRefuse {
					t.Fatalf("got %v; want refusal %s", err, tt.wantRefuse)
				}
				if len(em.emitted)+len(em.recorded) != 0 {
					t.Fatal("a refused command entered the session history")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Ack.Type != tt.wantType || res.Ack.Cause != tt.cmd.ID {
				t.Fatalf("ack %s cause %s; want %s cause %s", res.Ack.Type, res.Ack.Cause, tt.wantType, tt.cmd.ID)
			}
			var rej aep.Rejected
			json.Unmarshal(res.Ack.Data, &rej)
			if rej.Reason != tt.wantReason {
				t.Fatalf("reason %q; want %q", rej.Reason, tt.wantReason)
			}
			if strings.Contains(rej.Detail, "abcd1234secret") {
				t.Errorf("nack detail not redacted: %q", rej.Detail)
			}
			if len(em.recorded) != 1 {
				t.Errorf("the command was recorded %d times; want once", len(em.recorded))
			}
		})
	}
}

func TestIntakeDedupeReAcksByteIdentically(t *testing.T) {
	em, tg := &memEmitter{}, &target{}
	in := NewIntake(IntakeOptions{Emitter: em, Target: tg, Dedupe: 2})
	c := cmd("c1", "control.attention.respond", "s1", aep.Answer{Option: "yes"})
	first, _ := in.Submit(c, Sender{true})
	second, _ := in.Submit(c, Sender{true})
	if !second.Duplicate || string(second.Raw) != string(first.Raw) || tg.calls != 1 {
		t.Fatalf("redelivery: duplicate=%v calls=%d\n got %s\nwant %s", second.Duplicate, tg.calls, second.Raw, first.Raw)
	}
	if len(em.resent) != 1 || string(em.resent[0]) != string(first.Raw) {
		t.Fatalf("the recorded ack was not re-sent byte-identically: %q", em.resent)
	}
	// Same id from another sender is another command (dedupe on (source, id)).
	other := c
	other.Source = "aep://h/agent/other"
	if r, _ := in.Submit(other, Sender{true}); r.Duplicate || tg.calls != 2 {
		t.Fatalf("another source's command was deduped")
	}
	// Past the bound, the oldest dedupe state is forgotten.
	in.Submit(cmd("c2", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{true})
	if r, _ := in.Submit(c, Sender{true}); r.Duplicate {
		t.Fatalf("dedupe state kept beyond its bound")
	}
}

package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/google/go-cmp/cmp"
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

// target accepts option "yes" and any values, rejects everything else as
// invalid, and holds the secret keys it is told.
type target struct {
	calls   int
	by      []string
	groups  [][]string
	secret  []string
	answers []aep.Answer
}

func (t *target) RespondAs(cmd aep.Event, a aep.Answer, by string, groups []string, ack AckFunc) {
	t.calls++
	t.by = append(t.by, by)
	t.groups = append(t.groups, groups)
	t.answers = append(t.answers, a)
	if a.Option == "yes" || a.Values != nil {
		ack("", "")
		return
	}
	ack(aep.ReasonInvalid, "no pending attention request "+cmd.Subject+` in this session; field "password": minLength: must be at least 8 characters`)
}

// RecordedAnswer gates like a session would for its secret keys: their
// values become the placeholder.
func (t *target) RecordedAnswer(subject string, a aep.Answer) aep.Answer {
	if a.Values == nil {
		return a
	}
	out := aep.Answer{Option: a.Option, Text: a.Text, Values: map[string]any{}}
	for k, v := range a.Values {
		out.Values[k] = v
		for _, s := range t.secret {
			if k == s {
				out.Values[k] = aep.RedactedSecret
			}
		}
	}
	return out
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
		{"accepted", cmd("c1", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{Authenticated: true}, "", "control.accepted", ""},
		{"rejected by the target", cmd("c2", "control.attention.respond", "s1", aep.Answer{Option: "no"}), Sender{Authenticated: true}, "", "control.rejected", "invalid"},
		{"unsupported command", cmd("c3", "control.pause", "s1", aep.Answer{}), Sender{Authenticated: true}, "", "control.rejected", "unsupported"},
		{"unauthenticated", cmd("c4", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{}, "unauthorized", "", ""},
		{"another session", cmd("c5", "control.attention.respond", "s2", aep.Answer{Option: "yes"}), Sender{Authenticated: true}, "no-route", "", ""},
		{"no id", cmd("", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{Authenticated: true}, "invalid", "", ""},
		{"an operator that may only read", cmd("c6", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{Authenticated: true, By: "bob", ReadOnly: true}, "", "control.rejected", "unauthorized"},
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
	first, _ := in.Submit(c, Sender{Authenticated: true})
	second, _ := in.Submit(c, Sender{Authenticated: true})
	if !second.Duplicate || string(second.Raw) != string(first.Raw) || tg.calls != 1 {
		t.Fatalf("redelivery: duplicate=%v calls=%d\n got %s\nwant %s", second.Duplicate, tg.calls, second.Raw, first.Raw)
	}
	if len(em.resent) != 1 || string(em.resent[0]) != string(first.Raw) {
		t.Fatalf("the recorded ack was not re-sent byte-identically: %q", em.resent)
	}
	// Same id from another sender is another command (dedupe on (source, id)).
	other := c
	other.Source = "aep://h/agent/other"
	if r, _ := in.Submit(other, Sender{Authenticated: true}); r.Duplicate || tg.calls != 2 {
		t.Fatalf("another source's command was deduped")
	}
	// Past the bound, the oldest dedupe state is forgotten.
	in.Submit(cmd("c2", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{Authenticated: true})
	if r, _ := in.Submit(c, Sender{Authenticated: true}); r.Duplicate {
		t.Fatalf("dedupe state kept beyond its bound")
	}
}

// TestRejectionDetailIsRecordedVerbatim: a detail is structural, so the
// intake records it as the target wrote it. Run through the redaction
// pipeline, the id below became "01NOPE000000000[REDACTED:pii]" and the
// field name "password" swallowed its rule as "[REDACTED:secret]".
func TestRejectionDetailIsRecordedVerbatim(t *testing.T) {
	em, tg := &memEmitter{}, &target{}
	in := NewIntake(IntakeOptions{Emitter: em, Target: tg})
	c := cmd("c1", "control.attention.respond", "s1", aep.Answer{Option: "no"})
	c.Subject = "01NOPE0000000000000000000"
	res, err := in.Submit(c, Sender{Authenticated: true})
	if err != nil {
		t.Fatal(err)
	}
	var rej aep.Rejected
	if err := json.Unmarshal(res.Ack.Data, &rej); err != nil {
		t.Fatal(err)
	}
	want := `no pending attention request 01NOPE0000000000000000000 in this session; field "password": minLength: must be at least 8 characters`
	if rej.Detail != want {
		t.Fatalf("detail:\n got %q\nwant %q", rej.Detail, want)
	}
}

// TestSecretValuesNeverRecorded: the history records the command with its
// secret values replaced; the target decides on the real answer; a
// redelivery still gets the recorded ack byte for byte.
func TestSecretValuesNeverRecorded(t *testing.T) {
	em, tg := &memEmitter{}, &target{secret: []string{"password", "pin"}}
	in := NewIntake(IntakeOptions{Emitter: em, Target: tg})
	c := cmd("c1", "control.attention.respond", "s1", aep.Answer{Values: map[string]any{
		"user": "ada", "password": "s3cretpass", "pin": json.Number("1234")}})
	first, err := in.Submit(c, Sender{Authenticated: true})
	if err != nil || !first.Accepted() {
		t.Fatalf("got %+v, %v; want accepted", first.Ack, err)
	}
	if len(em.recorded) != 1 {
		t.Fatalf("recorded %d commands; want 1", len(em.recorded))
	}
	rec := em.recorded[0]
	want := `{"answer":{"values":{"password":"[REDACTED:secret]","pin":"[REDACTED:secret]","user":"ada"}}}`
	if string(rec.Data) != want {
		t.Fatalf("recorded data:\n got %s\nwant %s", rec.Data, want)
	}
	if rec.ID != c.ID || rec.Source != c.Source || rec.Subject != c.Subject {
		t.Errorf("the recorded command lost its identity: %+v", rec)
	}
	got := tg.answers[0].Values
	if got["password"] != "s3cretpass" || got["pin"] != json.Number("1234") {
		t.Errorf("the target did not get the real answer: %v", got)
	}
	second, _ := in.Submit(c, Sender{Authenticated: true})
	if !second.Duplicate || string(second.Raw) != string(first.Raw) || tg.calls != 1 || len(em.recorded) != 1 {
		t.Fatalf("redelivery: duplicate=%v calls=%d recorded=%d", second.Duplicate, tg.calls, len(em.recorded))
	}
}

// TestCommandsRecordedAsDecided: the history records the answer the
// session decided on, re-encoded, never the command's own bytes: members
// with other cases, duplicates and unknown members cannot carry a value
// past the gate.
func TestCommandsRecordedAsDecided(t *testing.T) {
	tests := []struct {
		name       string
		data       string
		recorded   string // "" means recorded without data
		wantValues map[string]any
	}{
		{"no secret keys", `{"answer":{"values":{"user":"ada","n":1e18}}}`, `{"answer":{"values":{"n":1e18,"user":"ada"}}}`,
			map[string]any{"user": "ada", "n": json.Number("1e18")}},
		{"option only", `{"answer":{"option":"decline"}}`, `{"answer":{"option":"decline"}}`, nil},
		{"a case variant is not the values member", `{"answer":{"Values":{"password":"s3cret"}}}`, `{"answer":{}}`, nil},
		{"duplicate answers: one is decided and recorded", `{"answer":{"values":{"password":"a"}},"answer":{"values":{"password":"s3cret"}}}`,
			`{"answer":{"values":{"password":"[REDACTED:secret]"}}}`, map[string]any{"password": "s3cret"}},
		{"unknown members are not recorded", `{"answer":{"option":"decline","note":"s3cret"},"extra":"s3cret"}`, `{"answer":{"option":"decline"}}`, nil},
		{"not an answer object", `{"answer":"yes"}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em, tg := &memEmitter{}, &target{secret: []string{"password"}}
			in := NewIntake(IntakeOptions{Emitter: em, Target: tg})
			c := cmd("c1", "control.attention.respond", "s1", aep.Answer{})
			c.Data = json.RawMessage(tt.data)
			in.Submit(c, Sender{Authenticated: true})
			if len(em.recorded) != 1 || string(em.recorded[0].Data) != tt.recorded {
				t.Fatalf("recorded %s; want %s", em.recorded[0].Data, tt.recorded)
			}
			if tt.recorded == "" {
				return
			}
			if diff := cmp.Diff(tt.wantValues, tg.answers[0].Values); diff != "" {
				t.Errorf("the target decided on other values (-want +got):\n%s", diff)
			}
		})
	}
}

// TestByIsWhoTheBindingAuthenticated: the target is told who the binding
// authenticated, whatever the command's agent claims; with no name, the
// shared token's holder. A read-only operator's command never reaches the
// target, and its rejection says who and why.
func TestByIsWhoTheBindingAuthenticated(t *testing.T) {
	t.Parallel()
	em, tg := &memEmitter{}, &target{}
	in := NewIntake(IntakeOptions{Emitter: em, Target: tg})
	c := cmd("c1", "control.attention.respond", "s1", aep.Answer{Option: "yes"})
	c.Agent = "alice" // claimed
	in.Submit(c, Sender{Authenticated: true, By: "bob"})
	in.Submit(cmd("c2", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{Authenticated: true})
	if want := []string{"bob", "token holder"}; fmt.Sprint(tg.by) != fmt.Sprint(want) {
		t.Fatalf("the target was told by %q; want %q", tg.by, want)
	}
	res, _ := in.Submit(cmd("c3", "control.attention.respond", "s1", aep.Answer{Option: "yes"}), Sender{Authenticated: true, By: "carol", ReadOnly: true})
	var rej aep.Rejected
	json.Unmarshal(res.Ack.Data, &rej)
	if tg.calls != 2 || rej.Reason != aep.ReasonUnauthorized || !strings.Contains(rej.Detail, `"carol" may read this session, not answer`) {
		t.Fatalf("a read-only command: %d calls, rejected %+v; want no call and an unauthorized rejection naming carol", tg.calls, rej)
	}
}

// TestIntakePassesTheSendersGroups: the groups the binding authenticated
// reach the target with the sender's name; a command cannot name its
// own (its data carries none that is read).
func TestIntakePassesTheSendersGroups(t *testing.T) {
	t.Parallel()
	em, tg := &memEmitter{}, &target{}
	in := NewIntake(IntakeOptions{Emitter: em, Target: tg})
	c := cmd("g1", "control.attention.respond", "s1", aep.Answer{Option: "yes"})
	c.Data = []byte(`{"answer":{"option":"yes"},"groups":["admins"],"by":"root"}`)
	if _, err := in.Submit(c, Sender{Authenticated: true, By: "alice", Groups: []string{"sre"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"sre"}}, tg.groups); diff != "" || strings.Join(tg.by, ",") != "alice" {
		t.Fatalf("the target got by %v and groups (-want +got):\n%s", tg.by, diff)
	}
}

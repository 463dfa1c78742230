package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Accepts is the command set a bridge session accepts (AEP-0004 §4.2).
var Accepts = []string{"control.attention.respond"}

// Emitter is the part of the session emitter the intake needs.
type Emitter interface {
	Emit(d aep.Draft) (aep.Event, []byte, error)
	Record(ev aep.Event) (aep.Event, []byte, error)
	Resend(ev aep.Event, raw []byte)
	Session() string
}

// AckFunc records the one ack decision for a command: reason "" accepts,
// any other reason (aep.ReasonInvalid, …) rejects with detail. It must be
// called exactly once, before any outcome event.
type AckFunc = func(reason, detail string) error

// Target decides the commands the intake accepts. The attention manager
// implements it.
type Target interface {
	// Respond decides a control.attention.respond and calls ack exactly
	// once, synchronously, before it emits the outcome events. The
	// details it rejects with are built from structural parts only (field
	// id, rule, bound) and never contain the answer: the intake records
	// them as they are.
	Respond(cmd aep.Event, answer aep.Answer, ack AckFunc)
	// SecretKeys returns which of keys, the value keys of a command's
	// answer to question subject, hold secret values. The session history
	// records the command with those values replaced by the AEP-0003 §9.4
	// secret placeholder; Respond still gets the real answer.
	SecretKeys(subject string, keys []string) []string
}

// Sender describes the binding a command arrived on.
type Sender struct {
	// Authenticated is true when the binding presented a valid token.
	Authenticated bool
}

// Result is the ack a command received.
type Result struct {
	Ack aep.Event
	Raw []byte
	// Duplicate is true when the command was a redelivery and Raw is the
	// recorded ack, re-emitted byte-identically.
	Duplicate bool
}

// Accepted reports whether the ack is control.accepted.
func (r Result) Accepted() bool { return r.Ack.Type == "control.accepted" }

// RefusalError is returned for a command the intake cannot ack because it
// cannot be addressed (no id, no source, another session). The transport
// answers it with a connection-scoped error frame (AEP-0004 §4.2) and it
// never enters the session's history.
type RefusalError struct {
	Code   string // no-route, unauthorized, invalid
	Detail string
}

func (e *RefusalError) Error() string { return e.Code + ": " + e.Detail }

// DefaultDedupe is how many commands' dedupe state an intake keeps.
const DefaultDedupe = 4096

// IntakeOptions configure an Intake.
type IntakeOptions struct {
	Emitter Emitter
	Target  Target
	// Dedupe bounds the remembered commands; 0 means DefaultDedupe. The
	// recorded ack is kept exactly as long as the dedupe state (AEP-0004 §3).
	Dedupe int
	Logger *slog.Logger
}

type key struct{ source, id string }

type record struct {
	ack aep.Event
	raw []byte
}

// Intake is one session's command intake. It is safe for concurrent use;
// commands are decided one at a time.
type Intake struct {
	em     Emitter
	target Target
	limit  int
	log    *slog.Logger

	// mu guards done and order, and serializes decisions.
	mu    sync.Mutex
	done  map[key]record
	order []key
}

// NewIntake returns an intake.
func NewIntake(o IntakeOptions) *Intake {
	in := &Intake{em: o.Emitter, target: o.Target, limit: o.Dedupe, log: o.Logger, done: map[key]record{}}
	if in.limit <= 0 {
		in.limit = DefaultDedupe
	}
	if in.log == nil {
		in.log = slog.New(slog.DiscardHandler)
	}
	return in
}

// Submit takes one command. Every addressable command gets exactly one ack
// decision; a redelivery (same source and id) gets the recorded ack again,
// byte-identically, and is never re-executed (AEP-0004 §2.3, §3).
func (in *Intake) Submit(cmd aep.Event, from Sender) (Result, error) {
	if cmd.ID == "" || cmd.Source == "" {
		return Result{}, &RefusalError{Code: "invalid", Detail: "a command needs an id and a source to be acknowledged"}
	}
	if cmd.Session != in.em.Session() {
		return Result{}, &RefusalError{Code: "no-route", Detail: fmt.Sprintf("no session %q here", cmd.Session)}
	}
	if !from.Authenticated {
		// AEP-0004 §4.1: control never flows on an unauthenticated binding.
		return Result{}, &RefusalError{Code: "unauthorized", Detail: "commands are accepted only on authenticated connections; present the bearer token"}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	k := key{cmd.Source, cmd.ID}
	if r, ok := in.done[k]; ok {
		// AEP-0004 §3: re-emit the recorded ack byte-identically.
		in.em.Resend(r.ack, r.raw)
		return Result{Ack: r.ack, Raw: r.raw, Duplicate: true}, nil
	}
	if _, _, err := in.em.Record(in.scrub(cmd)); err != nil {
		in.log.Warn("recording a command in the session history", "cmd", cmd.ID, "type", cmd.Type, "err", err)
	}
	var (
		res    Result
		acked  bool
		ackErr error
	)
	ack := func(reason, detail string) error {
		if acked {
			return errors.New("a command gets exactly one ack decision")
		}
		acked = true
		res, ackErr = in.ack(k, cmd, reason, detail)
		return ackErr
	}
	switch {
	case cmd.Validate() != nil:
		ack(aep.ReasonInvalid, cmd.Validate().Error())
	case cmd.Type != "control.attention.respond":
		ack(aep.ReasonUnsupported, fmt.Sprintf("%s is not accepted here; this session accepts %v", cmd.Type, Accepts))
	case cmd.Subject == "":
		ack(aep.ReasonInvalid, "control.attention.respond needs subject = the id of the attention.requested event")
	default:
		var r aep.Respond
		dec := json.NewDecoder(bytes.NewReader(cmd.Data))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			ack(aep.ReasonInvalid, "data.answer is not an answer object: option, text and values")
			break
		}
		in.target.Respond(cmd, r.Answer, ack)
	}
	if !acked {
		// A target that forgot to decide still owes the sender an ack.
		in.log.Error("the target made no ack decision; refusing the command", "cmd", cmd.ID)
		ack(aep.ReasonRefused, "the session could not decide this command")
	}
	return res, ackErr
}

func (in *Intake) ack(k key, cmd aep.Event, reason, detail string) (Result, error) {
	d := aep.Draft{Type: "control.accepted", Cause: cmd.ID, Capture: aep.CaptureMetadata}
	if reason != "" {
		// The detail is structural (Target.Respond) and never passes
		// through redaction, which would mangle ids and rule names.
		d = aep.Draft{Type: "control.rejected", Cause: cmd.ID, Capture: aep.CaptureRedacted,
			Data: aep.Rejected{Reason: reason, Detail: detail}}
	}
	ev, raw, err := in.em.Emit(d)
	if err != nil {
		return Result{}, fmt.Errorf("emitting the ack for %s: %w", cmd.ID, err)
	}
	in.done[k] = record{ack: ev, raw: raw}
	in.order = append(in.order, k)
	if len(in.order) > in.limit {
		delete(in.done, in.order[0])
		in.order = in.order[1:]
	}
	return Result{Ack: ev, Raw: raw}, nil
}

// scrub returns cmd as the session history may record it: the values its
// answer gives for secret keys (Target.SecretKeys) become the AEP-0003
// §9.4 secret placeholder, at every capture level. A command whose data
// is not an object with an answer object is recorded as it came, since it
// carries no answer values.
func (in *Intake) scrub(cmd aep.Event) aep.Event {
	if cmd.Type != "control.attention.respond" {
		return cmd
	}
	dec := json.NewDecoder(bytes.NewReader(cmd.Data))
	dec.UseNumber()
	var data map[string]any
	if dec.Decode(&data) != nil {
		return cmd
	}
	answer, _ := data["answer"].(map[string]any)
	values, _ := answer["values"].(map[string]any)
	if len(values) == 0 {
		return cmd
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	secret := in.target.SecretKeys(cmd.Subject, keys)
	if len(secret) == 0 {
		return cmd
	}
	for _, k := range secret {
		if _, ok := values[k]; ok {
			values[k] = aep.RedactedSecret
		}
	}
	b, err := json.Marshal(data)
	if err != nil {
		// Unreachable for decoded JSON. Without data the command fails
		// validation and is not recorded, which keeps the secret out.
		b = nil
	}
	cmd.Data = b
	return cmd
}

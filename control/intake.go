package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
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
	// RespondAs decides a control.attention.respond and calls ack
	// exactly once, synchronously, before it emits the outcome events,
	// which record by as who answered (never the command's own agent: a
	// sender's claim proves nothing). groups are by's identity groups
	// (Sender.Groups), which a permission request's approvers may name.
	// The details it rejects with are built from structural parts only
	// (field id, rule, bound) and never contain the answer: the intake
	// records them as they are.
	RespondAs(cmd aep.Event, answer aep.Answer, by string, groups []string, ack AckFunc)
	// RecordedAnswer returns a command's answer to question subject as
	// the session history may record it: gated for the capture ceiling,
	// secret values replaced by the AEP-0003 §9.4 placeholder. Respond
	// still gets the real answer.
	RecordedAnswer(subject string, answer aep.Answer) aep.Answer
}

// Sender describes the binding a command arrived on, and who the binding
// authenticated: the endpoint, or the hub a link comes from, says so; the
// command's own agent never does (AEP-0004 §8: it is asserted identity).
type Sender struct {
	// Authenticated is true when the binding presented a valid credential.
	Authenticated bool
	// By names who the binding authenticated (authority.Principal.Name),
	// and is what the session records as who answered. "" is the shared
	// token's holder, authority.TokenHolderName.
	By string
	// Groups are the identity groups of the operator By names
	// (authority.Principal.Groups), as its credential places it: never
	// read from the command. An approval policy's approvers may name
	// them. nil for the token's holder.
	Groups []string
	// ReadOnly is set for an operator that may see the session but not
	// answer: its commands are recorded and refused
	// control.rejected{unauthorized}, where it and everyone who sees the
	// session can read why.
	ReadOnly bool
}

// by is the name the session records for s.
func (s Sender) by() string {
	if s.By == "" {
		return authority.TokenHolderName
	}
	return s.By
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
	// Emitter records commands and emits acks: the session's emitter.
	// Required.
	Emitter Emitter
	// Target decides the commands: the session's attention manager.
	// Required.
	Target Target
	// Dedupe bounds the remembered commands; 0 means DefaultDedupe. The
	// recorded ack is kept exactly as long as the dedupe state (AEP-0004 §3).
	Dedupe int
	// Logger receives operational logs; nil discards them. Answer content
	// is never logged.
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

	// mu guards done, order and closed, and serializes decisions.
	mu     sync.Mutex
	done   map[key]record
	order  []key
	closed bool
}

// Close refuses every later command: the session is ending, and no
// command may be recorded or acked after its session.ended.
func (in *Intake) Close() {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
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
	if in.closed {
		return Result{}, &RefusalError{Code: "no-route", Detail: fmt.Sprintf("session %q has ended", cmd.Session)}
	}
	k := key{cmd.Source, cmd.ID}
	if r, ok := in.done[k]; ok {
		// AEP-0004 §3: re-emit the recorded ack byte-identically.
		in.em.Resend(r.ack, r.raw)
		return Result{Ack: r.ack, Raw: r.raw, Duplicate: true}, nil
	}
	answer, answerErr := decodeAnswer(cmd)
	if _, _, err := in.em.Record(in.recorded(cmd, answer, answerErr)); err != nil {
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
	if from.ReadOnly {
		ack(aep.ReasonUnauthorized, fmt.Sprintf("%q may read this session, not answer: its right is read; an operator that answers is added with operators add NAME --can answer",
			from.by()))
	} else if err := cmd.Validate(); err != nil {
		ack(aep.ReasonInvalid, err.Error())
	} else if cmd.Type != "control.attention.respond" {
		ack(aep.ReasonUnsupported, fmt.Sprintf("%s is not accepted here; this session accepts %v", cmd.Type, Accepts))
	} else if cmd.Subject == "" {
		ack(aep.ReasonInvalid, "control.attention.respond needs subject = the id of the attention.requested event")
	} else if answerErr != nil {
		ack(aep.ReasonInvalid, answerErr.Error())
	} else {
		in.target.RespondAs(cmd, answer, from.by(), from.Groups, ack)
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

// decodeAnswer reads a control.attention.respond's data.answer once, with
// exact member names: what the session decides is exactly what it records.
// (encoding/json matches struct fields case-insensitively and merges
// duplicate members, so two decoders could read two different answers out
// of one hostile command.) Unknown members are ignored and never recorded.
func decodeAnswer(cmd aep.Event) (aep.Answer, error) {
	bad := errors.New("data.answer is not an answer object: option and text are strings, values an object")
	var data map[string]json.RawMessage
	if json.Unmarshal(cmd.Data, &data) != nil {
		return aep.Answer{}, bad
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(data["answer"], &members) != nil || members == nil {
		return aep.Answer{}, bad
	}
	var a aep.Answer
	for name, dst := range map[string]*string{"option": &a.Option, "text": &a.Text} {
		if raw, ok := members[name]; ok && json.Unmarshal(raw, dst) != nil {
			return aep.Answer{}, bad
		}
	}
	if raw, ok := members["values"]; ok && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&a.Values) != nil || a.Values == nil {
			return aep.Answer{}, bad
		}
	}
	return a, nil
}

// recorded returns cmd as the session history may record it: its data is
// rebuilt from the decoded answer as the target gates it
// (Target.RecordedAnswer), never copied from the command's bytes, so no
// member the gate did not see (a secret, free text below the ceiling, a
// case-variant or unknown member) reaches the bus or the log. A command
// whose answer does not decode is recorded without its data.
func (in *Intake) recorded(cmd aep.Event, answer aep.Answer, answerErr error) aep.Event {
	if cmd.Type != "control.attention.respond" {
		return cmd
	}
	cmd.Data = nil
	if answerErr != nil {
		return cmd
	}
	b, err := json.Marshal(aep.Respond{Answer: in.target.RecordedAnswer(cmd.Subject, answer)})
	if err == nil {
		cmd.Data = b
	}
	return cmd
}

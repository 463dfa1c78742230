package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Sink receives every event a session emits or records, as the event and
// its exact encoding. Log and Hub are sinks.
type Sink interface {
	Write(ev aep.Event, raw []byte) error
}

// EmitterOptions configure an Emitter.
type EmitterOptions struct {
	// Agent is the AEP agent name. Required.
	Agent string
	// Session is the session id. Required; keep it to [A-Za-z0-9._-].
	Session string
	// Host names this machine in the source URI. Empty means "localhost".
	Host string
	// Capture is the global capture ceiling. Zero means metadata.
	Capture aep.Capture
	// AttentionCapture is the ceiling for attention.* events and for the
	// control acks that answer commands about them. Zero means redacted.
	AttentionCapture aep.Capture
	// Sinks receive every event, in order. A sink's failure is the sink's
	// to handle (the log counts what it could not write, a link queues);
	// the emitter logs it and goes on to the next sink, so one failing sink
	// never keeps an event from the others.
	Sinks []Sink
	// Logger receives sink failures; nil discards them.
	Logger *slog.Logger
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Extensions are extension attributes (AEP-0001 §5.4) set on every
	// event the emitter emits (not on the foreign ones it records), over
	// a draft's own of the same name: what is true of the whole session,
	// such as the gateway client it serves (aep.ExtClient). Nil means
	// none.
	Extensions map[string]any
	// MaxEvent bounds the encoding of one emitted event, in bytes: Emit
	// refuses a larger one with a *TooLargeError before any sink sees
	// it. 0 means DefaultMaxEvent, what an AEP endpoint of this bridge
	// takes per event, so no event is emitted that a hub would refuse.
	MaxEvent int64
}

// DefaultMaxEvent is the largest event, in bytes of its encoding, that an
// emitter emits and that an endpoint of this bridge takes (one POSTed
// event, one NDJSON line, one WebSocket frame): 1 MiB.
const DefaultMaxEvent = 1 << 20

// TooLargeError says an event was not emitted because its encoding is
// larger than a bound. It never quotes the event.
type TooLargeError struct {
	// Type is the event's type; Size its encoding's length and Max the
	// bound, in bytes.
	Type      string
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("refusing to emit %s: its encoding is %d bytes, over the bound of %d bytes", e.Type, e.Size, e.Max)
}

// Emitter stamps drafts into events of one session: a ULID id, the time,
// the source, agent and session, and a seq that increases by one per event
// within epoch 0 (a session never outlives its process, so its counter never
// restarts; AEP-0001 §7). Every event is down-leveled to its ceiling and
// validated before any sink sees it.
//
// An Emitter is safe for concurrent use; events reach the sinks in seq order.
type Emitter struct {
	agent, session, source string
	global, attention      aep.Capture
	sinks                  []Sink
	now                    func() time.Time
	log                    *slog.Logger
	maxEvent               int64
	ext                    map[string]json.RawMessage // Options.Extensions, encoded

	// mu serializes emission so seq order is sink order; ended is set
	// once session.ended is emitted: nothing follows it (AEP-0002 §7).
	mu    sync.Mutex
	seq   int64
	ended bool
}

// NewEmitter validates opts and returns an Emitter.
func NewEmitter(opts EmitterOptions) (*Emitter, error) {
	if !ValidName(opts.Agent) {
		return nil, fmt.Errorf("agent name %q must be 1-64 characters of [A-Za-z0-9._-], starting alphanumeric", opts.Agent)
	}
	if !ValidName(opts.Session) {
		return nil, fmt.Errorf("session id %q must be 1-64 characters of [A-Za-z0-9._-], starting alphanumeric", opts.Session)
	}
	host := opts.Host
	if host == "" {
		host = "localhost"
	}
	e := &Emitter{
		agent:     opts.Agent,
		session:   opts.Session,
		source:    fmt.Sprintf("aep://%s/agent/%s/session/%s", url.PathEscape(host), opts.Agent, opts.Session),
		global:    opts.Capture.OrDefault(),
		attention: opts.AttentionCapture,
		sinks:     opts.Sinks,
		now:       opts.Now,
		log:       opts.Logger,
		maxEvent:  opts.MaxEvent,
	}
	if e.maxEvent <= 0 {
		e.maxEvent = DefaultMaxEvent
	}
	var probe aep.Event
	for name, v := range opts.Extensions {
		if err := probe.SetExtension(name, v); err != nil {
			return nil, fmt.Errorf("the session's extension attribute %q: %w", name, err)
		}
	}
	e.ext = probe.Extensions
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.attention == 0 {
		e.attention = aep.CaptureRedacted
	}
	if e.now == nil {
		e.now = time.Now
	}
	return e, nil
}

// ValidName reports whether s fits the interop-safe identifier grammar of
// AEP-0003 §9.6, bounded to 64 characters so it is safe as a file name.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && r != '.' && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// Agent returns the emitter's agent name.
func (e *Emitter) Agent() string { return e.agent }

// Session returns the emitter's session id.
func (e *Emitter) Session() string { return e.session }

// Source returns the emitter's source URI.
func (e *Emitter) Source() string { return e.source }

// Ceiling returns the capture ceiling that applies to events of type t.
func (e *Emitter) Ceiling(t string) aep.Capture {
	if strings.HasPrefix(t, "attention.") || t == "control.accepted" || t == "control.rejected" || aep.IsCommand(t) {
		return e.attention // the per-category override (AEP-0003 §9.1) may be above or below the global ceiling
	}
	return e.global
}

// Emit stamps d, enforces the ceiling, validates the event and hands it to
// every sink. It returns the event and its exact encoding.
//
// The error contract is all or nothing: Emit returns an error only when the
// event could not be built (its data does not encode, it fails validation,
// or its encoding is over MaxEvent: a *TooLargeError), and then no sink saw
// it and no seq was used. Once built, the
// event is emitted: a sink that fails to take it is logged, never reported
// to the caller, because the event exists for every other sink and later
// lifecycle events may refer to it.
func (e *Emitter) Emit(d aep.Draft) (aep.Event, []byte, error) {
	return e.EmitWithin(d, 0)
}

// EmitWithin is Emit with a tighter bound for this event: it refuses, with
// a *TooLargeError and before any sink sees it, an event whose encoding is
// over max bytes or over MaxEvent. max <= 0 means MaxEvent alone.
func (e *Emitter) EmitWithin(d aep.Draft, max int64) (aep.Event, []byte, error) {
	if max <= 0 || max > e.maxEvent {
		max = e.maxEvent
	}
	// A payload aep encodes by hand is encoded for the ceiling at once,
	// and needs neither down-leveling nor a decode to validate it.
	data, capture, built := aep.EncodeBuilt(nil, d.Type, d.Data, d.Capture, e.Ceiling(d.Type))
	if built {
		d.Capture = capture
	} else if d.Data != nil {
		b, err := json.Marshal(d.Data)
		if err != nil {
			return aep.Event{}, nil, fmt.Errorf("encoding %s data: %w", d.Type, err)
		}
		data = b
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return aep.Event{}, nil, fmt.Errorf("refusing to emit %s: session %s has ended", d.Type, e.session)
	}
	now := e.now()
	ev := aep.Event{
		AEP: aep.Version, ID: aep.NewIDAt(now), Type: d.Type, Subject: d.Subject,
		Time: aep.FormatTime(now), Source: e.source, Agent: e.agent, Session: e.session,
		Seq: aep.Int64(e.seq), Epoch: aep.Int64(0), Cause: d.Cause,
		Severity: d.Severity, Capture: d.Capture, Data: data,
	}
	if ev.Capture == 0 {
		ev.Capture = aep.CaptureMetadata
	}
	for name, v := range d.Extensions {
		if err := ev.SetExtension(name, v); err != nil {
			return aep.Event{}, nil, fmt.Errorf("emitting %s: %w", d.Type, err)
		}
	}
	if len(e.ext) > 0 && ev.Extensions == nil {
		ev.Extensions = make(map[string]json.RawMessage, len(e.ext))
	}
	for name, raw := range e.ext {
		ev.Extensions[name] = raw
	}
	ev, raw, err := e.finish(ev, built)
	if err != nil {
		return aep.Event{}, nil, err
	}
	if int64(len(raw)) > max {
		return aep.Event{}, nil, &TooLargeError{Type: ev.Type, Size: int64(len(raw)), Max: max}
	}
	e.seq++
	e.ended = ev.Type == "session.ended"
	e.write(ev, raw)
	return ev, raw, nil
}

// Record hands a foreign event (a command addressed to this session, which
// carries no seq) to the sinks, down-leveled to its ceiling, so the history
// shows who commanded what. Its error contract is Emit's.
func (e *Emitter) Record(ev aep.Event) (aep.Event, []byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return aep.Event{}, nil, fmt.Errorf("refusing to record %s: session %s has ended", ev.Type, e.session)
	}
	ev, raw, err := e.finish(ev, false)
	if err != nil {
		return aep.Event{}, nil, err
	}
	e.write(ev, raw)
	return ev, raw, nil
}

// finish down-levels ev to its ceiling, validates and encodes it. built
// says its data is aep.EncodeBuilt's for that ceiling: then only its
// envelope is validated.
func (e *Emitter) finish(ev aep.Event, built bool) (aep.Event, []byte, error) {
	typ := ev.Type
	var err error
	if built {
		ev, err = aep.ValidBuilt(ev)
	} else {
		ev, err = aep.DownlevelValid(ev, e.Ceiling(typ))
	}
	if err != nil {
		var ve *aep.ValidationError
		if errors.As(err, &ve) {
			return aep.Event{}, nil, fmt.Errorf("refusing to emit an invalid %s event: %w", typ, err)
		}
		return aep.Event{}, nil, err
	}
	encode := ev.Encode
	if built {
		encode = ev.EncodeWithBuiltData
	}
	raw, err := encode()
	if err != nil {
		return aep.Event{}, nil, fmt.Errorf("encoding %s: %w", ev.Type, err)
	}
	return ev, raw, nil
}

// write hands an event to every sink, logging the sinks that fail.
func (e *Emitter) write(ev aep.Event, raw []byte) {
	for _, s := range e.sinks {
		if err := s.Write(ev, raw); err != nil {
			e.log.Warn("a sink did not take an event", "type", ev.Type, "id", ev.ID, "err", err)
		}
	}
}

// Resend hands an already-emitted event's exact bytes to the sinks that
// accept redelivery, for legal at-least-once redelivery (AEP-0004 §3: a
// recorded ack is re-emitted byte-identically). Sink failures are logged.
func (e *Emitter) Resend(ev aep.Event, raw []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.sinks {
		if r, ok := s.(Redeliverer); ok {
			if err := r.Redeliver(ev, raw); err != nil {
				e.log.Warn("a sink did not take a redelivered event", "type", ev.Type, "id", ev.ID, "err", err)
			}
		}
	}
}

// Redeliverer is a sink that accepts redelivery of an event it has already
// seen. The log does not (history holds each event once); the hub does.
type Redeliverer interface {
	Redeliver(ev aep.Event, raw []byte) error
}

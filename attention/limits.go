package attention

import (
	"errors"
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// Bounds of a session's open questions: an upstream server is not trusted
// to stop asking.
const (
	DefaultMaxOpen      = 256
	DefaultMaxOpenBytes = 16 << 20
)

// BoundedPublisher is a Publisher that refuses an event over a byte bound
// before anything sees it, with a *bus.TooLargeError. *bus.Emitter
// implements it.
type BoundedPublisher interface {
	EmitWithin(d aep.Draft, max int64) (aep.Event, []byte, error)
}

// The limits a LimitError names.
const (
	// LimitEventBytes is the size of one event: what an AEP endpoint
	// takes per event (bus.DefaultMaxEvent unless configured).
	LimitEventBytes = "event bytes"
	// LimitOpen is MaxOpen.
	LimitOpen = "open questions"
	// LimitOpenBytes is MaxOpenBytes.
	LimitOpenBytes = "open question bytes"
)

// LimitError says Raise refused a question because it would pass a limit.
// It never quotes the question.
type LimitError struct {
	// Limit names the limit: LimitEventBytes, LimitOpen or LimitOpenBytes.
	Limit string
	// Max is the limit's value: bytes, or questions for LimitOpen. Size
	// is the question's event in bytes, when known.
	Max, Size int64
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitOpen:
		return fmt.Sprintf("the question was not raised: the session already has %d open questions, its limit (%s); answer or withdraw some first", e.Max, e.Limit)
	case LimitOpenBytes:
		return fmt.Sprintf("the question was not raised: its %d-byte event would take the session's open questions past %d bytes, their limit (%s); answer or withdraw some first, or ask a smaller question", e.Size, e.Max, e.Limit)
	}
	return fmt.Sprintf("the question was not raised: its event would be %d bytes, over the %d bytes an AEP endpoint takes per event (%s); ask a smaller question", e.Size, e.Max, e.Limit)
}

// publishRequest publishes a question's attention.requested within what is
// left of MaxOpenBytes. Callers hold m.mu.
func (m *Manager) publishRequest(d aep.Draft) (aep.Event, []byte, error) {
	bp, ok := m.pub.(BoundedPublisher)
	if !ok {
		ev, raw, err := m.pub.Emit(d)
		if err != nil {
			return ev, raw, fmt.Errorf("publishing attention.requested: %w", err)
		}
		return ev, raw, nil
	}
	var held int64
	for _, q := range m.pending {
		held += q.size
	}
	left := m.maxOpenBytes - held
	if left <= 0 {
		return aep.Event{}, nil, &LimitError{Limit: LimitOpenBytes, Max: m.maxOpenBytes}
	}
	ev, raw, err := bp.EmitWithin(d, left)
	var tl *bus.TooLargeError
	switch {
	case err == nil:
		return ev, raw, nil
	case errors.As(err, &tl) && tl.Max == left:
		return aep.Event{}, nil, &LimitError{Limit: LimitOpenBytes, Max: m.maxOpenBytes, Size: tl.Size}
	case errors.As(err, &tl):
		return aep.Event{}, nil, &LimitError{Limit: LimitEventBytes, Max: tl.Max, Size: tl.Size}
	}
	return aep.Event{}, nil, fmt.Errorf("publishing attention.requested: %w", err)
}

// emitAnswered emits attention.answered for q, its answer gated to the
// capture ceiling. An answer whose event would exceed the bus's event
// bound is recorded at metadata capture instead (its numbers and booleans,
// no text), so the history still says who answered and when.
func (m *Manager) emitAnswered(q *question, cause string, applied aep.Answer, data aep.AttentionAnswered) aep.Event {
	data.Answer = GateAnswer(q.fields, applied, m.ceiling, m.red)
	d := aep.Draft{Type: "attention.answered", Subject: q.id, Cause: cause, Capture: m.ceiling, Data: data}
	ev, _, err := m.pub.Emit(d)
	if tooLarge := (*bus.TooLargeError)(nil); errors.As(err, &tooLarge) && m.ceiling > aep.CaptureMetadata {
		m.log.Warn("attention.answered is over the event bound; recording it at metadata capture", "id", q.id, "size", tooLarge.Size)
		data.Answer = GateAnswer(q.fields, applied, aep.CaptureMetadata, m.red)
		d.Capture, d.Data = aep.CaptureMetadata, data
		ev, _, err = m.pub.Emit(d)
	}
	if err != nil {
		m.log.Warn("emitting attention.answered", "id", q.id, "err", err)
	}
	return ev
}

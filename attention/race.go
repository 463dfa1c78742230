package attention

import (
	"fmt"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// An answer that comes after its question was settled lost a race: to
// another answer (an operator and the MCP client both answer under route
// both), to the timeout, or to a dismissal. It is never applied, and it is
// never silently dropped either: the bus records who sent it, when (the
// event's time) and that it lost, as TypeOutraced.
//
// Why a type of its own: AEP-0002 §5.3 says the recorded answer of
// attention.answered "always states what was actually applied", and
// consumers treat attention.answered as the emitter's statement of the
// outcome, so a second attention.answered for a losing answer would
// mislead every consumer that reads the last one. A vendor extension type
// is what AEP-0001 §6 provides for facts the core does not name, and every
// consumer MUST tolerate unknown types, so no consumer breaks on it. It is
// emitted at the metadata capture level: the losing answer keeps its
// option and structural values (numbers, booleans, choice ids), never its
// free text, which the global ceiling would not carry for a vendor type.

// TypeOutraced is the event type of an answer that lost the race.
const TypeOutraced = "x.aep-mcp-bridge.attention.outraced"

// Outraced is the data of TypeOutraced.
type Outraced struct {
	// Answer is the losing answer, gated to the metadata level.
	Answer aep.Answer `json:"answer"`
	// By names who sent it; Via is control (an operator) or oob (the MCP
	// client).
	By  string `json:"by"`
	Via string `json:"via"`
	// Resolution is how the question had ended: answered, auto,
	// dismissed or timeout; LostTo is the id of the event that ended it
	// (the winning attention.answered, or the terminal event).
	Resolution string `json:"resolution"`
	LostTo     string `json:"lost_to"`
	// WonBy names who won, when an answer did.
	WonBy string `json:"won_by,omitempty"`
}

// maxSettled bounds the settled questions the manager remembers to
// record late answers against.
const maxSettled = 1024

// settled is what the manager remembers of a question it settled.
type settled struct {
	fields     []aep.FieldSpec
	resolution string
	lostTo     string
	wonBy      string
	at         time.Time
}

// settleLocked remembers q as settled: resolution is its terminal, lostTo
// the event that ended it, wonBy the winner of an answered question.
func (m *Manager) settleLocked(q *question, resolution, lostTo, wonBy string) {
	if m.settled == nil {
		m.settled = map[string]settled{}
	}
	if _, ok := m.settled[q.id]; !ok {
		m.settledOrder = append(m.settledOrder, q.id)
	}
	m.settled[q.id] = settled{fields: q.fields, resolution: resolution, lostTo: lostTo, wonBy: wonBy, at: time.Now()}
	for len(m.settledOrder) > maxSettled {
		delete(m.settled, m.settledOrder[0])
		m.settledOrder = m.settledOrder[1:]
	}
}

// outracedLocked records a late answer to question id, if the manager
// remembers settling it, and returns how the question ended ("" when it
// does not remember the question).
func (m *Manager) outracedLocked(id string, a aep.Answer, by, via, cause string) (settled, bool) {
	s, ok := m.settled[id]
	if !ok {
		return settled{}, false
	}
	gated := GateAnswer(s.fields, a, aep.CaptureMetadata, m.red)
	d := Outraced{Answer: gated, By: by, Via: via, Resolution: s.resolution, LostTo: s.lostTo, WonBy: s.wonBy}
	if _, _, err := m.pub.Emit(aep.Draft{Type: TypeOutraced, Subject: id, Cause: cause, Capture: aep.CaptureMetadata, Data: d}); err != nil {
		m.log.Warn("emitting "+TypeOutraced, "id", id, "err", err)
	}
	return s, true
}

// lostDetail is the rejection detail for an operator's late answer.
func lostDetail(id string, s settled) string {
	switch {
	case s.wonBy != "":
		return fmt.Sprintf("attention request %s was already answered by %s; this answer lost the race and was not applied", id, s.wonBy)
	case s.resolution == "timeout":
		return fmt.Sprintf("attention request %s had already timed out; this answer was not applied", id)
	}
	return fmt.Sprintf("attention request %s was already %s; this answer was not applied", id, s.resolution)
}

package planetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// Door is one member of a plane under test, and how its process names
// sessions (certified to its key, when the plane needs that).
type Door struct {
	Member    plane.Member
	SessionID func() string
}

// Factory returns n members of one new plane, each a front door. It
// stops them when the test ends.
type Factory func(t *testing.T, n int) []Door

// Session is a real session of one member's process: emitter, attention
// manager and control intake, claimed on the plane.
type Session struct {
	t      *testing.T
	door   Door
	em     *bus.Emitter
	mgr    *attention.Manager
	intake *control.Intake

	// mu guards resolutions.
	mu          sync.Mutex
	resolutions map[string][]attention.Resolution
}

// NewSession starts a session on door and claims it.
func NewSession(t *testing.T, door Door) *Session {
	t.Helper()
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "planetest", Session: door.SessionID(), Host: "planetest",
		Sinks: []bus.Sink{door.Member.Sink()}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{t: t, door: door, em: em, resolutions: map[string][]attention.Resolution{}}
	s.mgr = attention.NewManager(attention.ManagerOptions{Agent: "planetest", Publisher: em, Timeout: 10 * time.Minute})
	s.intake = control.NewIntake(control.IntakeOptions{Emitter: em, Target: s.mgr})
	if _, _, err := em.Emit(aep.Draft{Type: "session.started", Data: map[string]any{"client": map[string]string{"name": "planetest"}}}); err != nil {
		t.Fatal(err)
	}
	b := plane.Binding{Session: em.Session(), Source: em.Source(), Agent: "planetest", Instance: "test", Accepts: control.Accepts}
	if err := door.Member.Claim(b, intakeTarget{s.intake}); err != nil {
		t.Fatal(err)
	}
	return s
}

// ID returns the session's id; Source its source.
func (s *Session) ID() string     { return s.em.Session() }
func (s *Session) Source() string { return s.em.Source() }

// form is the question every session asks: one required boolean.
var form = func() *translate.Form {
	f, err := translate.Parse("Deploy to production?", json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean","title":"OK"}},"required":["ok"]}`))
	if err != nil {
		panic(err)
	}
	return f
}()

// Ask raises a question and returns its id.
func (s *Session) Ask() string {
	s.t.Helper()
	var id string
	var idMu sync.Mutex
	idMu.Lock()
	id, err := s.mgr.Raise(attention.Spec{Form: form, Subject: "deployer", RespondVia: []string{"control"},
		Deliver: func(r attention.Resolution) {
			idMu.Lock()
			q := id
			idMu.Unlock()
			s.mu.Lock()
			s.resolutions[q] = append(s.resolutions[q], r)
			s.mu.Unlock()
		}})
	idMu.Unlock()
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

// Resolutions returns what the session's server got for question id.
func (s *Session) Resolutions(id string) []attention.Resolution {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]attention.Resolution(nil), s.resolutions[id]...)
}

// Pending returns how many questions the session waits on.
func (s *Session) Pending() int { return s.mgr.Len() }

// End ends the session: its questions are dismissed, session.ended is
// written, and its claim released.
func (s *Session) End() {
	s.t.Helper()
	s.intake.Close()
	s.mgr.Close()
	if _, _, err := s.em.Emit(aep.Draft{Type: "session.ended", Data: map[string]string{"reason": "normal"}}); err != nil {
		s.t.Fatal(err)
	}
	s.door.Member.Release(s.ID())
}

// intakeTarget hands routed commands to a session's intake, as the bridge
// does.
type intakeTarget struct{ in *control.Intake }

func (t intakeTarget) Submit(cmd aep.Event, _ []byte, _ plane.Principal) plane.Outcome {
	res, err := t.in.Submit(cmd, control.Sender{Authenticated: true})
	var re *control.RefusalError
	if errors.As(err, &re) {
		return plane.Outcome{Code: re.Code, Detail: re.Detail}
	}
	return plane.Outcome{Ack: res.Raw, Duplicate: res.Duplicate}
}

// Respond builds an operator's control.attention.respond answering
// question subject of session with values, and its bytes.
func Respond(session, subject string, values map[string]any) (*aep.Event, []byte) {
	data, _ := json.Marshal(aep.Respond{Answer: aep.Answer{Values: values}})
	ev := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Subject: subject, Cause: subject,
		Time: aep.FormatTime(time.Now()), Source: "aep://planetest/agent/operator", Agent: "operator", Session: session,
		Capture: aep.CaptureRedacted, Data: data}
	raw, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return &ev, raw
}

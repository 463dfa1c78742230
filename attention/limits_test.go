package attention

import (
	"encoding/json"

	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// sinkLog records what a real emitter hands its sinks.
type sinkLog struct {
	mu  sync.Mutex
	raw [][]byte
}

func (s *sinkLog) Write(_ aep.Event, raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = append(s.raw, raw)
	return nil
}

func (s *sinkLog) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.raw)
}

// limitedManager is a Manager publishing through a real session emitter.
func limitedManager(t *testing.T, o ManagerOptions) (*Manager, *sinkLog) {
	t.Helper()
	sink := &sinkLog{}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "a", Session: "s", Sinks: []bus.Sink{sink}, AttentionCapture: aep.CaptureFull})
	if err != nil {
		t.Fatal(err)
	}
	o.Agent, o.Publisher, o.Ceiling, o.Timeout = "a", em, aep.CaptureFull, time.Hour
	m := NewManager(o)
	t.Cleanup(m.Close)
	return m, sink
}

// ask raises an informational question whose prompt is n bytes.
func ask(m *Manager, n int) (string, error) {
	return m.Raise(Spec{Message: strings.Repeat("q", n), Subject: "srv", RespondVia: []string{"control"}, Deliver: func(Resolution) {}})
}

// wantLimit checks that err is a *LimitError naming limit, and that it
// does not quote the question.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("got %v; want a *LimitError naming %q", err, limit)
	}
	if !strings.Contains(err.Error(), limit) || strings.Contains(err.Error(), "qqqq") {
		t.Fatalf("error %q: want it to name %q and never quote the question", err, limit)
	}
}

// TestAQuestionOverTheEventBoundIsRefusedBeforeAnySinkSeesIt: an upstream
// server's question whose event an endpoint would refuse is never
// published, and the session goes on asking smaller ones.
func TestAQuestionOverTheEventBoundIsRefusedBeforeAnySinkSeesIt(t *testing.T) {
	m, sink := limitedManager(t, ManagerOptions{})
	_, err := ask(m, bus.DefaultMaxEvent)
	wantLimit(t, err, LimitEventBytes)
	if n := sink.count(); n != 0 {
		t.Fatalf("%d events reached the sinks; want none", n)
	}
	if len(m.Pending()) != 0 {
		t.Fatalf("pending %v; want nothing", m.Pending())
	}
	if _, err := ask(m, 100); err != nil {
		t.Fatalf("a small question after the refused one: %v", err)
	}
}

// TestOpenQuestionsAreBoundedInCountAndBytes: a session holds at most
// MaxOpen questions and MaxOpenBytes of their events; a settled question
// makes room again.
func TestOpenQuestionsAreBoundedInCountAndBytes(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		m, sink := limitedManager(t, ManagerOptions{MaxOpen: 3})
		var ids []string
		for range 3 {
			id, err := ask(m, 10)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		_, err := ask(m, 10)
		wantLimit(t, err, LimitOpen)
		if n := sink.count(); n != 3 {
			t.Fatalf("%d events published; want the 3 questions only", n)
		}
		m.Dismiss(ids[0])
		if _, err := ask(m, 10); err != nil {
			t.Fatalf("after one was dismissed: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		probe, sink := limitedManager(t, ManagerOptions{})
		if _, err := ask(probe, 4096); err != nil {
			t.Fatal(err)
		}
		size := int64(len(sink.raw[0]))
		m, sink := limitedManager(t, ManagerOptions{MaxOpenBytes: 2*size + size/2})
		first, err := ask(m, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ask(m, 4096); err != nil {
			t.Fatal(err)
		}
		_, err = ask(m, 4096)
		wantLimit(t, err, LimitOpenBytes)
		if n := sink.count(); n != 2 {
			t.Fatalf("%d events published; want the 2 questions that fit", n)
		}
		if _, err := ask(m, 100); err != nil {
			t.Fatalf("a question that fits what is left: %v", err)
		}
		m.Dismiss(first)
		if _, err := ask(m, 4096); err != nil {
			t.Fatalf("after one was dismissed: %v", err)
		}
	})
}

// TestDefaultLimits: without options, a session holds DefaultMaxOpen
// questions.
func TestDefaultLimits(t *testing.T) {
	m, _ := limitedManager(t, ManagerOptions{})
	for i := range DefaultMaxOpen {
		if _, err := ask(m, 10); err != nil {
			t.Fatalf("question %d: %v", i, err)
		}
	}
	_, err := ask(m, 10)
	wantLimit(t, err, LimitOpen)
}

// An answer too large for the event bound still reaches the server, and
// the history records it at metadata capture rather than losing it.
func TestAnAnswerOverTheEventBoundIsRecordedAtMetadata(t *testing.T) {
	sink := &sinkLog{}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "a", Session: "s", Sinks: []bus.Sink{sink}, AttentionCapture: aep.CaptureFull, MaxEvent: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(ManagerOptions{Agent: "a", Publisher: em, Ceiling: aep.CaptureFull, Timeout: time.Hour})
	t.Cleanup(m.Close)
	f, err := translate.Parse("name and age?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Resolution, 1)
	id, err := m.Raise(Spec{Form: f, Subject: "srv", RespondVia: []string{"control"}, Deliver: func(r Resolution) { got <- r }})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 16<<10)
	var reason string
	m.Respond(aep.Event{ID: "cmd", Subject: id, Agent: "op"}, aep.Answer{Values: map[string]any{"name": long, "age": json.Number("42")}},
		"op", func(r, _ string) error { reason = r; return nil })
	if reason != "" {
		t.Fatalf("the answer was refused (%s); want it accepted", reason)
	}
	if r := <-got; r.Outcome != Answered || r.Decision.Content["name"] != long {
		t.Fatalf("the server got %v without the whole name; want it answered with it", r.Outcome)
	}
	var answered, resolved map[string]any
	for _, raw := range sink.raw {
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		switch ev["type"] {
		case "attention.answered":
			answered = ev
		case "attention.resolved":
			resolved = ev
		}
	}
	if answered == nil || resolved == nil {
		t.Fatalf("answered %v, resolved %v; want both recorded", answered != nil, resolved != nil)
	}
	if answered["capture"] != "metadata" || resolved["cause"] != answered["id"] {
		t.Errorf("answered at capture %v, resolved caused by %v (answered is %v); want metadata, caused by the answer", answered["capture"], resolved["cause"], answered["id"])
	}
	values := answered["data"].(map[string]any)["answer"].(map[string]any)["values"].(map[string]any)
	if _, ok := values["name"]; ok || values["age"] == nil {
		t.Errorf("recorded values %v; want the age without the name", values)
	}
}

package attention

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

type memPub struct {
	mu  sync.Mutex
	evs []aep.Event
}

func (p *memPub) Emit(d aep.Draft) (aep.Event, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data, _ := json.Marshal(d.Data)
	ev := aep.Event{ID: aep.NewID(), Type: d.Type, Subject: d.Subject, Cause: d.Cause, Capture: d.Capture, Data: data}
	for name, v := range d.Extensions {
		if err := ev.SetExtension(name, v); err != nil {
			return aep.Event{}, nil, err
		}
	}
	p.evs = append(p.evs, ev)
	return ev, data, nil
}

func (p *memPub) types() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.evs {
		out = append(out, e.Type)
	}
	return out
}

func form(t *testing.T) *translate.Form {
	t.Helper()
	f, err := translate.Parse("n?", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRaiseNamesTheIntegerFields: a question whose form has integer fields
// names them in the envelope (aep.ExtIntegerFields), at every capture
// level, and never in its field specs, which stay the pinned mapping.
func TestRaiseNamesTheIntegerFields(t *testing.T) {
	f, err := translate.Parse("m", json.RawMessage(`{"type":"object","properties":{
		"n":{"type":"integer"},"x":{"type":"number"},"s":{"type":"string"},"k":{"type":"integer","minimum":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, ceiling := range []aep.Capture{aep.CaptureNone, aep.CaptureMetadata, aep.CaptureRedacted, aep.CaptureFull} {
		pub := &memPub{}
		m := NewManager(ManagerOptions{Agent: "a", Publisher: pub, Timeout: time.Minute, Ceiling: ceiling})
		if _, err := m.Raise(Spec{Form: f, Subject: "srv", RespondVia: []string{"control"}, Deliver: func(Resolution) {}}); err != nil {
			t.Fatal(err)
		}
		ev := pub.evs[0]
		if got := string(ev.Extensions[aep.ExtIntegerFields]); got != `"[\"n\",\"k\"]"` {
			t.Errorf("at %s the envelope's %s is %s", ceiling, aep.ExtIntegerFields, got)
		}
		if strings.Contains(string(ev.Data), "integer") {
			t.Errorf("at %s a field spec carries integer-ness: %s", ceiling, ev.Data)
		}
		m.Close()
	}
	// A form without integer fields carries no attribute.
	pub := &memPub{}
	m := NewManager(ManagerOptions{Agent: "a", Publisher: pub, Timeout: time.Minute})
	defer m.Close()
	g, _ := translate.Parse("m", json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`))
	if _, err := m.Raise(Spec{Form: g, Subject: "srv", RespondVia: []string{"control"}, Deliver: func(Resolution) {}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := pub.evs[0].Extensions[aep.ExtIntegerFields]; ok {
		t.Errorf("a form without integer fields carries %s", aep.ExtIntegerFields)
	}
}

func TestTimeoutDeliversCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub := &memPub{}
		m := NewManager(ManagerOptions{Agent: "a", Publisher: pub, Timeout: time.Minute})
		got := make(chan Resolution, 1)
		id, err := m.Raise(Spec{Form: form(t), Subject: "srv", RespondVia: []string{"control"}, Deliver: func(r Resolution) { got <- r }})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(59 * time.Second) // fake time inside the bubble
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("resolved before the timeout")
		default:
		}
		time.Sleep(time.Second)
		synctest.Wait()
		r := <-got
		if r.Outcome != TimedOut || r.Decision.Outcome != translate.OutcomeCancel {
			t.Fatalf("got %+v; want a timeout with cancel", r)
		}
		last := pub.evs[len(pub.evs)-1]
		var d aep.AttentionTimeout
		json.Unmarshal(last.Data, &d)
		if last.Type != "attention.timeout" || last.Subject != id || d.AfterMS != 60000 {
			t.Fatalf("last event %s %s %+v", last.Type, last.Subject, d)
		}
	})
}

func TestEveryQuestionGetsOneTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub := &memPub{}
		m := NewManager(ManagerOptions{Agent: "a", Publisher: pub, Timeout: time.Minute})
		var mu sync.Mutex
		delivered := map[string]int{}
		raise := func() string {
			var id string
			id, _ = m.Raise(Spec{Form: form(t), RespondVia: []string{"control"}, Deliver: func(Resolution) {
				mu.Lock()
				delivered[id]++
				mu.Unlock()
			}})
			return id
		}
		a, b, c, d := raise(), raise(), raise(), raise()
		m.Respond(aep.Event{ID: "cmd", Subject: a, Agent: "op"}, aep.Answer{Values: map[string]any{"n": json.Number("1")}}, "op", func(string, string) error { return nil })
		m.Dismiss(b)
		if !m.ClientAnswered(c, "ide", json.RawMessage(`{"action":"decline"}`)) {
			t.Fatal("client answer lost")
		}
		// d is still pending when the session closes.
		m.Close()
		time.Sleep(2 * time.Minute) // no timer may fire after Close
		synctest.Wait()
		for _, id := range []string{a, b, c, d} {
			if delivered[id] != 1 {
				t.Errorf("question %s delivered %d times; want 1", id, delivered[id])
			}
		}
		terminals := 0
		for _, typ := range pub.types() {
			if typ == "attention.resolved" || typ == "attention.timeout" {
				terminals++
			}
		}
		if terminals != 4 {
			t.Errorf("%d terminals for 4 questions: %v", terminals, pub.types())
		}
		if _, err := m.Raise(Spec{Form: form(t), Deliver: func(Resolution) {}}); err != ErrClosed {
			t.Errorf("Raise after Close: %v", err)
		}
	})
}

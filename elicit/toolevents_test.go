package elicit

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// orderPublisher records the drafts it is given, in order.
type orderPublisher struct {
	mu     sync.Mutex
	drafts []aep.Draft
}

func (o *orderPublisher) Emit(d aep.Draft) (aep.Event, []byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drafts = append(o.drafts, d)
	return aep.Event{ID: fmt.Sprintf("ev-%d", len(o.drafts))}, nil, nil
}

// types returns the types of the drafts emitted so far.
func (o *orderPublisher) types() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, d := range o.drafts {
		out = append(out, d.Type)
	}
	return out
}

// count returns how many drafts were emitted.
func (o *orderPublisher) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.drafts)
}

// TestToolEventsBoundedInOrder: while Run runs, tool.* events wait for a
// flush, never more than maxToolEvents of them (the producer that fills
// the queue emits it), none is dropped, and they reach the publisher in
// the order they were queued, each end naming its call's tool.requested.
// Outside Run an event is emitted at once.
func TestToolEventsBoundedInOrder(t *testing.T) {
	t.Parallel()
	pub := &orderPublisher{}
	p := New(Options{Client: newMemConn(), Server: newMemConn(), Publisher: pub})
	p.queueTool(toolEvent{typ: "tool.requested", tc: &toolCall{tool: "before"}, args: []byte(`{}`)})
	if n := pub.count(); n != 1 {
		t.Fatalf("before Run, %d events emitted; want the one at once", n)
	}
	p.runTools(true)
	const calls = maxToolEvents + maxToolEvents/2 + 3
	for i := range calls {
		tc := &toolCall{tool: fmt.Sprintf("t%d", i), callID: fmt.Sprint(i)}
		p.queueTool(toolEvent{typ: "tool.requested", tc: tc, args: []byte(`{"i":1}`)})
		p.queueTool(toolEvent{typ: "tool.completed", tc: tc, data: aep.ToolCompleted{Tool: tc.ref(), Status: "success"}})
		p.toolEv.mu.Lock()
		queued := len(p.toolEv.q)
		p.toolEv.mu.Unlock()
		if queued >= maxToolEvents {
			t.Fatalf("%d events queued; want fewer than %d", queued, maxToolEvents)
		}
	}
	if pub.count() == 1 {
		t.Fatal("a full queue was not emitted by its producer")
	}
	p.runTools(false)
	p.flushTools(nil)
	if got, want := len(pub.drafts), 1+2*calls; got != want {
		t.Fatalf("%d events emitted; want %d", got, want)
	}
	for i := range calls {
		req, end := pub.drafts[1+2*i], pub.drafts[2+2*i]
		if req.Type != "tool.requested" || end.Type != "tool.completed" || req.Subject != fmt.Sprintf("t%d", i) || end.Subject != req.Subject {
			t.Fatalf("events %d and %d are %s %s, %s %s; want call t%d's tool.requested then its tool.completed", 1+2*i, 2+2*i, req.Type, req.Subject, end.Type, end.Subject, i)
		}
		if want := fmt.Sprintf("ev-%d", 2+2*i); end.Cause != want {
			t.Fatalf("call t%d's tool.completed names cause %q; want %q, its tool.requested", i, end.Cause, want)
		}
	}
}

// TestProxyEventsFollowQueuedToolEvents: every event the proxy emits at
// once (a question it raises, a refused schema, a denial) comes after the
// tool.* events queued before it and not yet flushed: an elicitation the
// server sends while its reader has not flushed the call that caused it,
// or a denied call behind an allowed one in the same burst.
func TestProxyEventsFollowQueuedToolEvents(t *testing.T) {
	t.Parallel()
	pub := &orderPublisher{}
	var atRaise []string
	life := &fakeLifecycle{}
	life.duringRaise = func() { atRaise = pub.types() }
	p := New(Options{Client: newMemConn(), Server: newMemConn(), Publisher: pub, Manager: life})
	p.runTools(true)
	defer p.runTools(false)
	queue := func(tool string) *toolCall {
		tc := &toolCall{tool: tool}
		p.queueTool(toolEvent{typ: "tool.requested", tc: tc, args: []byte(`{}`)})
		return tc
	}

	queue("a")
	if _, err := p.raise(attention.Spec{Subject: "s", Deliver: func(attention.Resolution) {}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"tool.requested"}, atRaise); diff != "" {
		t.Fatalf("events emitted when the question was raised (-want +got):\n%s", diff)
	}

	queue("b")
	p.refuse(&translate.UnsupportedError{Reason: "nested objects"}, "s")
	denied := queue("c")
	p.denyCall([]byte(`7`), denied, "policy", "no")
	want := []string{"tool.requested", "tool.requested", "error.raised", "tool.requested", "tool.denied"}
	if diff := cmp.Diff(want, pub.types()); diff != "" {
		t.Fatalf("emitted (-want +got):\n%s", diff)
	}
	pub.mu.Lock()
	cause := pub.drafts[4].Cause
	pub.mu.Unlock()
	if cause != "ev-4" {
		t.Fatalf("tool.denied names cause %q; want ev-4, its call's tool.requested", cause)
	}
}

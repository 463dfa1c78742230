package elicit

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// fakeLifecycle is an in-memory attention lifecycle: it records what the
// proxy asks of it and answers as its fields say.
type fakeLifecycle struct {
	raiseErr  error
	scripted  bool
	clientWon bool
	// duringRaise runs inside Raise, after the question is published and
	// before its id is returned (another goroutine's message lands there).
	duringRaise func()

	raised []attention.Spec
	calls  []string
}

func (f *fakeLifecycle) Raise(s attention.Spec) (string, error) {
	if f.raiseErr != nil {
		return "", f.raiseErr
	}
	f.raised = append(f.raised, s)
	if f.duringRaise != nil {
		f.duringRaise()
	}
	return "q" + string(rune('0'+len(f.raised))), nil
}

func (f *fakeLifecycle) Scripted(string, *translate.Form) bool { return f.scripted }

func (f *fakeLifecycle) ClientAnswered(id, client string, result json.RawMessage) bool {
	f.calls = append(f.calls, "answered "+id+" by "+client+" "+string(result))
	return f.clientWon
}

func (f *fakeLifecycle) Dismiss(id string) bool {
	f.calls = append(f.calls, "dismiss "+id)
	return true
}

func (f *fakeLifecycle) Complete(elicitationID string) bool {
	f.calls = append(f.calls, "complete "+elicitationID)
	return true
}

// written returns what the proxy wrote to c, as strings, and forgets it.
func written(c *memConn) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, b := range c.out {
		out = append(out, string(b))
	}
	c.out = nil
	return out
}

const (
	formClientInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`
	formQuestion   = `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`
)

// TestLifecycleSeam drives the proxy against an in-memory lifecycle: each
// case is one decision the lifecycle owns, and what the proxy does with it.
func TestLifecycleSeam(t *testing.T) {
	tests := []seamCase{
		{
			name:       "raise fails: the server gets an error, the client nothing",
			life:       fakeLifecycle{raiseErr: errors.New("the session is ending")},
			wantServer: []string{`{"jsonrpc":"2.0","id":"e1","error":{"code":-32603,"message":"the bridge could not publish the question: the session is ending"}}`},
		},
		{
			name:     "scripted: the client gets no copy",
			life:     fakeLifecycle{scripted: true},
			wantOpen: 1,
			wantVia:  []string{"control"},
		},
		{
			name:       "the client wins the race: its answer goes to the server",
			life:       fakeLifecycle{clientWon: true},
			client:     []string{`{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{"ok":true}}}`},
			wantClient: []string{formQuestion},
			wantServer: []string{`{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{"ok":true}}}`},
			wantCalls:  []string{`answered q1 by c {"action":"accept","content":{"ok":true}}`},
			wantOpen:   1, // the fake never delivers
		},
		{
			name:       "the client loses the race: its answer is dropped",
			client:     []string{`{"jsonrpc":"2.0","id":"e1","result":{"action":"decline"}}`},
			wantClient: []string{formQuestion},
			wantCalls:  []string{`answered q1 by c {"action":"decline"}`},
			wantOpen:   1,
			wantVia:    []string{"control", "oob"},
		},
		{
			name:       "a delivered timeout: cancel to the server, the client's copy withdrawn",
			deliver:    &attention.Resolution{Outcome: attention.TimedOut},
			wantClient: []string{formQuestion, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"no answer before the bridge's timeout","requestId":"e1"}}`},
			wantServer: []string{`{"jsonrpc":"2.0","id":"e1","result":{"action":"cancel"}}`},
		},
		{
			name:       "a URL elicitation completes: the lifecycle resolves it; a form-only client is not told",
			server:     []string{`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"el-1"}}`},
			wantClient: []string{formQuestion},
			wantCalls:  []string{"complete el-1"},
			wantOpen:   1,
		},
		{
			name:       "the server cancels: the lifecycle dismisses, the client's copy is cancelled",
			server:     []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"e1"}}`},
			wantClient: []string{formQuestion, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"e1"}}`},
			wantCalls:  []string{"dismiss q1"},
			wantOpen:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// seamCase is one case of TestLifecycleSeam: the proxy initialized by a
// client that can elicit, then a form question from the server, then what
// the case adds.
type seamCase struct {
	name       string
	life       fakeLifecycle
	client     []string // sent after initialize and the question
	server     []string // sent after the client's
	deliver    *attention.Resolution
	wantServer []string
	wantClient []string
	wantCalls  []string
	wantOpen   int64
	wantVia    []string // the question's respond_via, when raised
}

func (tt seamCase) run(t *testing.T) {
	cl, sv := newMemConn(), newMemConn()
	life := tt.life
	p := New(Options{Client: cl, Server: sv, Manager: &life})
	p.fromClient([]byte(formClientInit))
	written(sv)
	p.fromServer([]byte(formQuestion))
	for _, m := range tt.client {
		p.fromClient([]byte(m))
	}
	for _, m := range tt.server {
		p.fromServer([]byte(m))
	}
	if tt.deliver != nil {
		life.raised[0].Deliver(*tt.deliver)
	}
	if diff := cmp.Diff(tt.wantServer, written(sv)); diff != "" {
		t.Errorf("the server received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tt.wantClient, written(cl)); diff != "" {
		t.Errorf("the client received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tt.wantCalls, life.calls); diff != "" {
		t.Errorf("settle calls (-want +got):\n%s", diff)
	}
	if tt.wantVia != nil {
		if diff := cmp.Diff(tt.wantVia, life.raised[0].RespondVia); diff != "" {
			t.Errorf("respond_via (-want +got):\n%s", diff)
		}
	}
	if got := p.open.Load(); got != tt.wantOpen {
		t.Errorf("open questions: got %d; want %d", got, tt.wantOpen)
	}
}

// TestRequestEndsWhileTheQuestionIsRaised: the client cancels the request
// whose response stream carried an elicitation after the question reached
// the bus and before the proxy learnt its id. The question is still
// dismissed, the server gets cancel, and the client is not shown a
// question for a request it gave up.
func TestRequestEndsWhileTheQuestionIsRaised(t *testing.T) {
	cl, sv := newMemConn(), newMemConn()
	life := &fakeLifecycle{}
	p := New(Options{Client: cl, Server: sv, Manager: life})
	p.fromClient([]byte(formClientInit))
	p.fromClient([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask"}}`))
	written(sv)
	written(cl)
	life.duringRaise = func() {
		p.fromClient([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
		life.duringRaise = nil
	}
	// It came on the response stream of request 7.
	p.relay(p.ctx, Frame{Head: []byte(formQuestion), Related: json.RawMessage(`7`)}, false)
	if diff := cmp.Diff([]string{"dismiss q1"}, life.calls); diff != "" {
		t.Fatalf("lifecycle calls (-want +got):\n%s", diff)
	}
	life.raised[0].Deliver(attention.Resolution{Outcome: attention.Dismissed})
	want := []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, `{"jsonrpc":"2.0","id":"e1","result":{"action":"cancel"}}`}
	if diff := cmp.Diff(want, written(sv)); diff != "" {
		t.Errorf("the server received (-want +got):\n%s", diff)
	}
	if got := written(cl); len(got) != 0 {
		t.Errorf("the client received %q; want nothing", got)
	}
}

// TestRoundEndsWhileItsQuestionIsRaised: the client cancels a multi
// round-trip request after the first question of its input_required round
// reached the bus and before the proxy learnt its id. That question is
// still dismissed, the round's later questions are never raised, nothing
// is retried, and the client is not shown the input_required of a request
// it gave up.
func TestRoundEndsWhileItsQuestionIsRaised(t *testing.T) {
	const (
		inputRequired = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{` +
			`"a":{"method":"elicitation/create","params":{"message":"a?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}},` +
			`"b":{"method":"elicitation/create","params":{"message":"b?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}},"requestState":"s1"}}`
		cancel = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`
	)
	tests := []struct {
		name  string
		route Route
		// clientCaps are the client's per-request capabilities.
		clientCaps string
	}{
		{name: "the bridge answers the round alone", route: RouteRemote, clientCaps: `{}`},
		{name: "the client races the operators", route: RouteBoth, clientCaps: `{"elicitation":{"form":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, sv := newMemConn(), newMemConn()
			life := &fakeLifecycle{}
			p := New(Options{Client: cl, Server: sv, Manager: life, Route: tt.route})
			p.fromClient([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tt.clientCaps + `}}}`))
			written(sv)
			life.duringRaise = func() {
				p.fromClient([]byte(cancel))
				life.duringRaise = nil
			}
			p.fromServer([]byte(inputRequired))
			if got := len(life.raised); got != 1 {
				t.Errorf("%d questions raised; want 1: the round's later questions are not raised once it is abandoned", got)
			}
			if diff := cmp.Diff([]string{"dismiss q1"}, life.calls); diff != "" {
				t.Fatalf("lifecycle calls (-want +got):\n%s", diff)
			}
			life.raised[0].Deliver(attention.Resolution{Outcome: attention.Dismissed})
			if diff := cmp.Diff([]string{cancel}, written(sv)); diff != "" {
				t.Errorf("the server received (-want +got):\n%s", diff)
			}
			if got := written(cl); len(got) != 0 {
				t.Errorf("the client received %q; want nothing", got)
			}
			if got := trackedBy(p); got != (tracked{}) {
				t.Errorf("tracked %+v after the exchange was abandoned; want nothing", got)
			}
		})
	}
}

package elicit

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// settlingLifecycle decides races as attention.Manager does: a question
// settled by an operator is no longer the client's to answer. What
// Manager.Respond does after its lock (delivering the resolution) is the
// test's to do, when it chooses.
type settlingLifecycle struct {
	mu      sync.Mutex
	raised  []attention.Spec
	settled map[string]bool
}

func (f *settlingLifecycle) Raise(s attention.Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raised = append(f.raised, s)
	return "q" + string(rune('0'+len(f.raised))), nil
}

func (f *settlingLifecycle) Scripted(string, *translate.Form) bool { return false }

// operatorAnswers settles question id as Respond does under its lock: the
// operator is told accepted; the resolution is not delivered yet.
func (f *settlingLifecycle) operatorAnswers(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settled[id] = true
}

func (f *settlingLifecycle) ClientAnswered(id, client string, result json.RawMessage) bool {
	return f.settle(id)
}

func (f *settlingLifecycle) Dismiss(id string) bool { return f.settle(id) }

func (f *settlingLifecycle) settle(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	won := !f.settled[id]
	f.settled[id] = true
	return won
}

func (f *settlingLifecycle) Complete(string) bool { return false }

// TestOperatorAckedAnswerReachesTheServer: under route both, an operator
// answers a multi round-trip question and is told accepted; the client's
// own retry, carrying its answer to the same question, arrives before the
// lifecycle has delivered the operator's answer to the round. The
// operator won that question, so the retry the server gets carries the
// operator's answer, not the client's.
func TestOperatorAckedAnswerReachesTheServer(t *testing.T) {
	synctest.Test(t, operatorAckedAnswerReachesTheServer)
}

func operatorAckedAnswerReachesTheServer(t *testing.T) {
	cl, sv := newMemConn(), newMemConn()
	life := &settlingLifecycle{settled: map[string]bool{}}
	p := New(Options{Client: cl, Server: sv, Manager: life, Route: RouteBoth})
	defer p.Close()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	p.fromClient([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy",` + meta + `}}`))
	written(sv)
	p.fromServer([]byte(`{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","requestState":"s1","inputRequests":{` +
		`"ok":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}}}`))
	if got := written(cl); len(got) != 1 || !strings.Contains(got[0], `"input_required"`) {
		t.Fatalf("the client got %q; want the input_required, its copy of the round", got)
	}
	if len(life.raised) != 1 {
		t.Fatalf("%d questions raised; want 1", len(life.raised))
	}

	life.operatorAnswers("q1") // acked: the operator was told accepted
	retried := make(chan struct{})
	go func() {
		defer close(retried)
		p.fromClient([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"deploy","requestState":"s1",` +
			`"inputResponses":{"ok":{"action":"accept","content":{"ok":false}}},` + meta + `}}`))
	}()
	// The retry is handled as far as it goes before the lifecycle
	// delivers the operator's answer: all of it, or up to a wait for
	// that answer.
	synctest.Wait()
	life.raised[0].Deliver(attention.Resolution{Outcome: attention.Answered,
		Decision: translate.Decision{Outcome: translate.OutcomeAccept, Content: map[string]any{"ok": true}}})
	<-retried
	got := written(sv)
	if len(got) != 1 {
		t.Fatalf("the server got %q; want the client's retry", got)
	}
	var retry struct {
		Params struct {
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(got[0]), &retry); err != nil {
		t.Fatal(err)
	}
	if want := `{"action":"accept","content":{"ok":true}}`; compactJSON(retry.Params.InputResponses["ok"]) != want {
		t.Errorf("the retry the server got answers %s; want the operator's answer %s, which the operator was told was accepted",
			retry.Params.InputResponses["ok"], want)
	}
}

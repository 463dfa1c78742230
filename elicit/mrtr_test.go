package elicit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// inputRequiredFor is a server's input_required answer to request id, one
// boolean form question per key, with requestState state.
func inputRequiredFor(id, state string, keys ...string) string {
	var reqs []string
	for _, k := range keys {
		reqs = append(reqs, fmt.Sprintf(`"%s":{"method":"elicitation/create","params":{"message":"%s?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`, k, k))
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{%s},"requestState":"%s"}}`, id, strings.Join(reqs, ","), state)
}

// TestClientRetryOfAFailedExchange: under route both the operators answer
// first, so the bridge retries upstream itself and the client's own retry
// waits for the bridge's result. When the exchange then fails (here the
// next round's second question is refused at a limit), the client's
// retry gets the error under its own id, whether it was already waiting
// or comes later; and the round's question already raised is dismissed.
func TestClientRetryOfAFailedExchange(t *testing.T) {
	const (
		meta        = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
		call        = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",` + meta + `}}`
		clientRetry = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","inputResponses":{"a":{"action":"decline"}},"requestState":"s1",` + meta + `}}`
	)
	le := &attention.LimitError{Limit: attention.LimitOpen, Max: 1}
	// Re-encoded as the bridge's retry result is: members in key order.
	wantError := `{"error":{"code":-32602,"message":"input request c: the bridge is at a limit (open questions): ` + le.Error() + `"},"id":2,"jsonrpc":"2.0"}`
	tests := []struct {
		name string
		// early: the client retries before the bridge's retry is
		// answered; otherwise after the exchange failed.
		early bool
	}{
		{name: "the client's retry waits for the bridge's", early: true},
		{name: "the client retries after the exchange failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, sv := newMemConn(), newMemConn()
			life := &fakeLifecycle{}
			p := New(Options{Client: cl, Server: sv, Manager: life, Route: RouteBoth})
			p.newID = func() string { return "r1" }
			p.fromClient([]byte(call))
			p.fromServer([]byte(inputRequiredFor("1", "s1", "a")))
			if got := written(cl); len(got) != 1 || !strings.Contains(got[0], `"input_required"`) {
				t.Fatalf("the client got %q; want the input_required", got)
			}
			// An operator answers first: the bridge retries upstream.
			life.raised[0].Deliver(attention.Resolution{Outcome: attention.Answered, Decision: translate.Decision{Outcome: translate.OutcomeAccept, Content: map[string]any{"ok": true}}})
			if out := written(sv); len(out) != 2 || !strings.Contains(out[1], `"id":"aep-mcp-bridge-r1"`) {
				t.Fatalf("the server got %q; want the call and the bridge's retry", out)
			}
			if tt.early {
				p.fromClient([]byte(clientRetry))
				if got := written(cl); len(got) != 0 {
					t.Fatalf("the client's retry got %q before the bridge's retry was answered; want nothing yet", got)
				}
			}
			// The next round's second question is refused at a limit.
			life.duringRaise = func() { life.raiseErr = le }
			p.fromServer([]byte(inputRequiredFor(`"aep-mcp-bridge-r1"`, "s2", "b", "c")))
			if !tt.early {
				p.fromClient([]byte(clientRetry))
			}
			if diff := cmp.Diff([]string{wantError}, written(cl)); diff != "" {
				t.Errorf("the client received (-want +got):\n%s", diff)
			}
			if !slices.Contains(life.calls, "dismiss q2") {
				t.Errorf("lifecycle calls %q; want the next round's question (q2) dismissed", life.calls)
			}
			if out := written(sv); len(out) != 0 {
				t.Errorf("the server got %q; want nothing: the client's retry never goes upstream once the operators won", out)
			}
		})
	}
}

// TestClientRetryWaitingAtTheEnd: a client's retry that waits for the
// bridge's retry when the session ends gets the end's error, as the
// client's requests awaiting the server do.
func TestClientRetryWaitingAtTheEnd(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	cl, sv := newMemConn(), newMemConn()
	life := &fakeLifecycle{}
	p := New(Options{Client: cl, Server: sv, Manager: life, Route: RouteBoth})
	p.fromClient([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",` + meta + `}}`))
	p.fromServer([]byte(inputRequiredFor("1", "s1", "a")))
	life.raised[0].Deliver(attention.Resolution{Outcome: attention.TimedOut})
	p.fromClient([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","inputResponses":{"a":{"action":"decline"}},"requestState":"s1",` + meta + `}}`))
	written(cl)
	p.FailInflight("the MCP server is gone")
	want := []string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"the MCP server is gone"}}`}
	if diff := cmp.Diff(want, written(cl)); diff != "" {
		t.Errorf("the client received (-want +got):\n%s", diff)
	}
}

// TestSplitRound: under route both a client that declared sampling but
// not elicitation gets a round that mixes the two (the bridge declared
// elicitation to the server). The client gets the sampling request
// alone; the operators get the elicitation; the client's retry, held
// when it comes before the operator's answer, reaches the server with
// both inputResponses and the client's requestState.
func TestSplitRound(t *testing.T) {
	const (
		meta  = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
		call  = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",` + meta + `}}`
		mixed = `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s1","inputRequests":{` +
			`"ask":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}},` +
			`"gen":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}}}`
		retry = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","inputResponses":{"gen":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}},"requestState":"s1",` + meta + `}}`
	)
	for _, early := range []bool{true, false} {
		t.Run(fmt.Sprintf("the client retries before the operator answers: %t", early), func(t *testing.T) {
			cl, sv := newMemConn(), newMemConn()
			life := &fakeLifecycle{}
			p := New(Options{Client: cl, Server: sv, Manager: life, Route: RouteBoth})
			p.fromClient([]byte(call))
			written(sv)
			p.fromServer([]byte(mixed))
			got := written(cl)
			if len(got) != 1 || !strings.Contains(got[0], `"gen"`) || strings.Contains(got[0], `elicitation/create`) {
				t.Fatalf("the client got %q; want the input_required with the sampling request alone", got)
			}
			if len(life.raised) != 1 {
				t.Fatalf("questions raised: %d; want 1 (the elicitation)", len(life.raised))
			}
			answer := func() {
				life.raised[0].Deliver(attention.Resolution{Outcome: attention.Answered, Decision: translate.Decision{Outcome: translate.OutcomeAccept, Content: map[string]any{"ok": true}}})
			}
			if !early {
				answer()
				if out := written(sv); len(out) != 0 {
					t.Fatalf("the server got %q after the operator's answer; want nothing: the client's retry carries it", out)
				}
			}
			p.fromClient([]byte(retry))
			if early {
				if out := written(sv); len(out) != 0 {
					t.Fatalf("the server got %q before the operator answered; want the client's retry held", out)
				}
				answer()
			}
			out := written(sv)
			if len(out) != 1 {
				t.Fatalf("the server got %q; want the client's retry", out)
			}
			for _, want := range []string{`"id":2`, `"requestState":"s1"`, `"gen":{`, `"ask":{"action":"accept","content":{"ok":true}}`} {
				if !strings.Contains(out[0], want) {
					t.Errorf("the retry upstream %s lacks %s", out[0], want)
				}
			}
			p.fromServer([]byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[],"resultType":"complete"}}`))
			if got := written(cl); len(got) != 1 || !strings.Contains(got[0], `"id":2`) {
				t.Errorf("the client got %q; want the final result under its retry's id", got)
			}
		})
	}
}

package elicit

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// deepResult is a result nested deeper than encoding/json decodes, which
// the proxy relays as a stream.
var deepResult = `{"x":` + strings.Repeat("[", maxParseDepth+1) + strings.Repeat("]", maxParseDepth+1) + `}`

// TestLateAnswerToAForgottenQuestion: once the table of questions withdrawn
// from the client forgets one, the client's late answer to it still never
// reaches the server, which has the operator's answer already; nor does a
// second late answer to one it remembers. A new request under the same id
// is live again, and responses to the server's other requests pass.
func TestLateAnswerToAForgottenQuestion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cl, sv, mgr, stop := boundedProxy(t, RouteBoth, 1)
		defer stop()
		cl.in <- []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"c","version":"1"}}}`)
		synctest.Wait()
		question := func(id string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`, id)
		}
		// Operators answer e1 and e2; the client's copies are withdrawn,
		// and the table of withdrawn copies (bound 1) forgets e1.
		for i, id := range []string{"e1", "e2"} {
			sv.in <- []byte(question(id))
			synctest.Wait()
			pend := mgr.Pending()
			if len(pend) != 1 {
				t.Fatalf("%d questions pending; want 1", len(pend))
			}
			mgr.Respond(aep.Event{ID: fmt.Sprintf("c%d", i), Subject: pend[0].ID, Agent: "op"}, aep.Answer{Values: map[string]any{"ok": true}}, "op", func(string, string) error { return nil })
			synctest.Wait()
		}
		written(sv)
		written(cl)
		late := func(id string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","result":{"action":"accept","content":{"ok":false}}}`, id)
		}
		cl.in <- []byte(late("e1")) // forgotten
		cl.in <- []byte(late("e2")) // remembered: recorded as lost
		cl.in <- []byte(late("e2")) // a second answer
		synctest.Wait()
		if out := written(sv); len(out) != 0 {
			t.Errorf("the server got %q; want nothing: it has its answers already", out)
		}
		// The server asks again under e1, and pings: both are live.
		sv.in <- []byte(question("e1"))
		sv.in <- []byte(`{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
		synctest.Wait()
		cl.in <- []byte(late("e1"))
		cl.in <- []byte(`{"jsonrpc":"2.0","id":"p1","result":{}}`)
		synctest.Wait()
		want := []string{late("e1"), `{"jsonrpc":"2.0","id":"p1","result":{}}`}
		if diff := cmp.Diff(want, written(sv)); diff != "" {
			t.Errorf("the server received (-want +got):\n%s", diff)
		}
	})
}

// TestLateResultToAForgottenRequest: once the table of client requests
// the bridge stopped waiting for forgets one, the server's late response
// to it still never reaches the client, which got the bridge's error
// already; nor does a second late response to one it remembers, whether
// read whole or relayed as a stream, nor a late response to a retry of the
// bridge's own it forgot. A request reusing the id is live again.
func TestLateResultToAForgottenRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cl, sv, _, stop := boundedProxy(t, RouteRemote, 1)
		defer stop()
		// Each request makes the bridge stop waiting for the one before;
		// the table of those (bound 1) forgets request 1.
		for id := 1; id <= 3; id++ {
			cl.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id))
			synctest.Wait()
		}
		if out := written(cl); len(out) != 2 || !strings.Contains(out[0], `"id":1,"error"`) || !strings.Contains(out[1], `"id":2,"error"`) {
			t.Fatalf("the client got %q; want errors for requests 1 and 2", out)
		}
		sv.in <- []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`) // forgotten
		sv.in <- []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`) // remembered
		sv.in <- []byte(`{"jsonrpc":"2.0","id":2,"result":` + deepResult + `}`)
		sv.in <- []byte(`{"jsonrpc":"2.0","id":"aep-mcp-bridge-r9","result":{}}`)
		synctest.Wait()
		if out := written(cl); len(out) != 0 {
			t.Errorf("the client got %d messages, the first %.80q; want nothing: it has its responses already", len(out), out[0])
		}
		cl.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
		synctest.Wait()
		sv.in <- []byte(`{"jsonrpc":"2.0","id":1,"result":{"n":1}}`)
		synctest.Wait()
		// Request 1 again made the bridge stop waiting for request 3.
		want := []string{`{"jsonrpc":"2.0","id":3,"error"`, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`}
		got := written(cl)
		if len(got) == 2 {
			got[0] = got[0][:len(want[0])]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the client received (-want +got):\n%s", diff)
		}
	})
}

// TestTombstones: a set remembers up to its bound, the oldest first
// forgotten; an id removed and added again counts from its new add.
func TestTombstones(t *testing.T) {
	tests := []struct {
		name string
		ops  []string // "+k" adds k, "-k" removes it
		want map[string]bool
	}{
		{name: "empty", want: map[string]bool{"1": false}},
		{name: "within the bound", ops: []string{"+1", "+2", "+3"}, want: map[string]bool{"1": true, "2": true, "3": true}},
		{name: "past the bound the oldest goes", ops: []string{"+1", "+2", "+3", "+4"}, want: map[string]bool{"1": false, "2": true, "4": true}},
		{name: "removed", ops: []string{"+1", "+2", "-1"}, want: map[string]bool{"1": false, "2": true}},
		{name: "added again outlives its first add", ops: []string{"+1", "+2", "+3", "-1", "+1", "+4"}, want: map[string]bool{"1": true, "2": false, "3": true, "4": true}},
		{name: "ids are JSON text", ops: []string{"+1"}, want: map[string]bool{"1": true, `"1"`: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := tombstones{max: 3}
			for _, op := range tt.ops {
				if op[0] == '+' {
					ts.add(op[1:])
				} else {
					ts.remove(op[1:])
				}
			}
			for k, want := range tt.want {
				if got := ts.has(k); got != want {
					t.Errorf("has(%s): got %v; want %v", k, got, want)
				}
			}
			if len(ts.ring) > ts.max {
				t.Errorf("%d hashes kept; want at most %d", len(ts.ring), ts.max)
			}
		})
	}
}

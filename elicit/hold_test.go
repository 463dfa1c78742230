package elicit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// fuzzPolicy denies rm*, holds deploy for alice, allows the rest.
const fuzzPolicy = `
rules:
  - {id: no-rm, tool: 'rm*', action: deny, reason: no}
  - {id: ask-deploy, tool: deploy, action: ask, approvers: [alice], timeout: 1m}
  - {id: guard, tool: guarded, when: 'args.n > 3', action: deny, reason: big}
`

type staticPolicy struct{ p *policy.Policy }

func (s staticPolicy) Policy() *policy.Policy { return s.p }

// FuzzPolicyCall feeds arbitrary client messages through a Proxy under an
// approval policy, with a server scripted to answer every request. Whatever
// the input, nothing panics, every reply is valid JSON, no request is
// answered twice, every request is answered once the session's end fails
// what is left (a held call included) unless the client cancelled it, and
// the server never reads a tools/call the policy denies or holds.
func FuzzPolicyCall(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm_all","arguments":{}}}`)
	f.Add(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	f.Add(`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"guarded","arguments":{"n":"x"}}},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}]`)
	f.Add(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}`)
	f.Add(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"deploy","arguments":{"a":1,"a":2}}}`)
	// Two spellings of name: encoding/json takes the last in any case,
	// an exact reader the first.
	f.Add(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","Name":"deploy"}}`)
	f.Add(`{"method":"tools/call","params":{"nAme":"deploy"}}`)
	// encoding/json reads argumentſ as arguments, the server does not.
	f.Add(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"guarded","arguments":{"n":9},"argumentſ":{"n":1}}}`)
	pol, err := policy.Parse([]byte(fuzzPolicy))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Split(s, "\n")
		if len(lines) > 64 {
			lines = lines[:64]
		}
		synctest.Test(t, func(t *testing.T) {
			cl := newMemConn()
			sv := &memConn{in: make(chan []byte, 4096), wrote: make(chan struct{}, 1), closed: make(chan struct{})}
			sv.record = func(b []byte) {
				if !json.Valid(b) {
					t.Errorf("the server got invalid JSON %q", b)
				}
				for _, m := range messagesIn(b) {
					if m.Method == "tools/call" {
						var p struct{ Name string }
						json.Unmarshal(m.Params, &p)
						if strings.HasPrefix(p.Name, "rm") || p.Name == "deploy" {
							t.Errorf("the server got a tools/call of %q, which the policy denies or holds", p.Name)
						}
					}
				}
				for _, id := range requestIDs(b) {
					sv.in <- []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`)
				}
			}
			mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
			p := New(Options{Client: cl, Server: sv, Manager: mgr, Publisher: nopPublisher{}, Policy: staticPolicy{pol}})
			ended := make(chan Ending, 1)
			go func() { ended <- p.Run(context.Background()) }()
			sent, cancelled := map[string]int{}, map[string]bool{}
			for _, l := range lines {
				if strings.TrimSpace(l) == "" {
					continue
				}
				for _, id := range requestIDs([]byte(l)) {
					sent[idKey(id)]++
				}
				for _, m := range messagesIn([]byte(l)) {
					if m.Method == "notifications/cancelled" {
						var c struct{ RequestID json.RawMessage }
						if json.Unmarshal(m.Params, &c) == nil && len(c.RequestID) > 0 {
							cancelled[idKey(c.RequestID)] = true
						}
					}
				}
				cl.in <- []byte(l)
				synctest.Wait()
			}
			p.FailInflight("the session ended")
			synctest.Wait()
			got := map[string]int{}
			cl.mu.Lock()
			for _, b := range cl.out {
				if !json.Valid(b) {
					t.Errorf("the client got invalid JSON %q", b)
				}
				for _, id := range responseIDs(b) {
					got[idKey(id)]++
				}
			}
			cl.mu.Unlock()
			for k, n := range sent {
				if got[k] > n || (got[k] != n && !cancelled[k]) {
					t.Errorf("request id %s: sent %d time(s), answered %d time(s); want one answer each", k, n, got[k])
				}
			}
			cl.Close()
			<-ended
			mgr.Close()
			p.Close()
		})
	})
}

package elicit

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// FuzzClientMessage feeds arbitrary client messages, one a line, through
// a running Proxy whose server is scripted to answer every request it
// gets. Whatever the input, the proxy must not panic, must write only
// valid JSON, and every request the client sent must get exactly one
// reply: the server's, relayed, or the proxy's own error.
func FuzzClientMessage(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"c"}}}`)
	f.Add(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"result":{}}]`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	f.Add(`{"jsonrpc":"2.0","id":"x","result":{"action":"accept","content":{}}}`)
	f.Add("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"requestState\":\"s\",\"inputResponses\":{}}}")
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Split(s, "\n")
		if len(lines) > 64 {
			lines = lines[:64]
		}
		synctest.Test(t, func(t *testing.T) {
			cl := newMemConn()
			sv := &memConn{in: make(chan []byte, 4096), wrote: make(chan struct{}, 1), closed: make(chan struct{})}
			// The scripted server answers each request it gets with an
			// empty result.
			sv.record = func(b []byte) {
				if !json.Valid(b) {
					t.Errorf("the server got invalid JSON %q", b)
				}
				for _, id := range requestIDs(b) {
					sv.in <- []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`)
				}
			}
			mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
			p := New(Options{Client: cl, Server: sv, Manager: mgr})
			ended := make(chan Ending, 1)
			go func() { ended <- p.Run(context.Background()) }()
			sent := map[string]int{}
			for _, l := range lines {
				if strings.TrimSpace(l) == "" {
					continue // the stdio framing skips blank lines
				}
				for _, id := range requestIDs([]byte(l)) {
					sent[idKey(id)]++
				}
				cl.in <- []byte(l)
				synctest.Wait()
			}
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
				if got[k] != n {
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

// requestIDs returns the ids of the messages in b (one message or a
// batch) that call for a reply: its requests, and a message the proxy
// cannot parse whole, whose error reply carries the id it can read. One
// nested too deep to parse is relayed, and a request among those is the
// server's to answer.
func requestIDs(b []byte) []json.RawMessage {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) > 0 && t[0] != '[' {
		var m message
		if m.parse(t) != nil {
			env, err := jsonrpc.Scan(t, jsonrpc.ScanOptions{})
			deep := err == nil && env.MaxDepth > maxParseDepth
			if jsonrpc.HasID(env.ID) && json.Valid(env.ID) && (!deep || env.IsRequest()) {
				return []json.RawMessage{env.ID}
			}
			return nil
		}
	}
	var ids []json.RawMessage
	for _, m := range messagesIn(b) {
		if m.isRequest() && m.hasID() {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// responseIDs returns the ids of the responses in b.
func responseIDs(b []byte) []json.RawMessage {
	var ids []json.RawMessage
	for _, m := range messagesIn(b) {
		if m.isResponse() && m.hasID() {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// messagesIn parses b as the proxy does: one message, or a batch of them.
func messagesIn(b []byte) []message {
	t := bytes.TrimLeft(b, " \t\r\n")
	raws := []json.RawMessage{t}
	if len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &raws) != nil {
			return nil
		}
	}
	var out []message
	for _, r := range raws {
		var m message
		if m.parse(r) == nil {
			out = append(out, m)
		}
	}
	return out
}

package gateway

import (
	"testing"
)

// FuzzEnvelope feeds POST bodies and Last-Event-ID values, both from
// clients, to the gateway's readers: they never panic, a body they accept
// is JSON-RPC objects, and an event id they accept names a stream and a
// non-negative position.
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t","io.modelcontextprotocol/protocolVersion":"2026-07-28"},"requestState":"s"}}`), "p3_7")
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"a","result":{"resultType":"input_required","requestState":"x"}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}]`), "g1_0")
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":[]}`), "_")
	f.Add([]byte(`[]`), "p_1")
	f.Add([]byte(`{"id":{"x":1},"params":5}`), "p1_-1")
	f.Fuzz(func(t *testing.T, body []byte, lastID string) {
		msgs, _, ok := split(body)
		if ok {
			for _, m := range msgs {
				env, ok := parse(m)
				if !ok {
					continue
				}
				if env.isRequest() && env.isResponse() {
					t.Fatalf("%s is both a request and a response", m)
				}
				_ = idKey(env.ID)
				_ = env.progressToken()
			}
		}
		if sid, seq, ok := parseEventID(lastID); ok && (sid == "" || seq < 0) {
			t.Fatalf("parseEventID(%q) = %q, %d", lastID, sid, seq)
		}
	})
}

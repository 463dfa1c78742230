package elicit

import (
	"context"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// BenchmarkRelayRoundTrip measures the proxy's own work for one request and
// its response (envelope reads, tracking, writes), with in-memory streams.
func BenchmarkRelayRoundTrip(b *testing.B) {
	cl, sv := newMemConn(), newMemConn()
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
	defer mgr.Close()
	p := New(Options{Client: cl, Server: sv, Manager: mgr})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = ctx
	req := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ping"},"_meta":{"progressToken":7}}}`)
	resp := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"ping"}]}}`)
	p.fromClient(req) // the first message starts the session
	b.ReportAllocs()
	for b.Loop() {
		p.fromClient(req)
		p.fromServer(resp)
		cl.mu.Lock()
		cl.out = cl.out[:0]
		cl.mu.Unlock()
		sv.mu.Lock()
		sv.out = sv.out[:0]
		sv.mu.Unlock()
	}
}

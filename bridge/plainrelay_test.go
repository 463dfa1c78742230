package bridge

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// TestPlainRelayOffHostNeedsPlainRelay links a host with --relay to a
// bridge's endpoint (which proves the token) by a remote name over plain
// ws://: the host refuses to start, naming --relay-allow-plain; with
// PlainRelay it links, and its question is answered through the relay.
func TestPlainRelayOffHostNeedsPlainRelay(t *testing.T) {
	t.Parallel()
	hub := newTestHost(t, HostOptions{Listen: "127.0.0.1:0", Token: "relay-token", Agent: "hub", AllowHosts: []string{"relay.example"}})
	_, port, _ := net.SplitHostPort(hub.Addr())
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, hub.Addr())
	}
	o := HostOptions{Token: "relay-token", Agent: "linked", Relays: []string{"ws://relay.example:" + port + "/socket"}, Dial: dial}
	if h, err := NewHost(o); err == nil || !strings.Contains(err.Error(), "--relay-allow-plain") {
		if h != nil {
			h.Close(context.Background())
		}
		t.Fatalf("NewHost over plain ws:// off this machine: %v; want a refusal naming --relay-allow-plain", err)
	}
	o.PlainRelay = true
	linked := newTestHost(t, o)
	s := startSession(t, sessionConfig{host: linked})
	op := connectOperatorWith(t, hub.Addr(), "relay-token")
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := op.question(func(m map[string]any) bool { return m["agent"] == "linked" })
	op.answer(req, aep.Answer{Option: "decline"})
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" {
		t.Fatalf("server got %v; want decline", got)
	}
}

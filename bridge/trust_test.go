package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/squatter"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/relay"
)

const trustToken = "trust-token-0123456789abcdefghijklmnopqrstuvwxyz"

// TestSquatterAfterTheHubDiedGetsNothing: bridge B joined hub A and has a
// question pending; A stops and a squatter takes its port. B's link keeps
// trying, and the squatter receives neither the token nor the question.
func TestSquatterAfterTheHubDiedGetsNothing(t *testing.T) {
	t.Parallel()
	// A's port stays reserved once A stops, so no other test's listener
	// can take it before the squatter does.
	a := newTestHost(t, HostOptions{Listen: fmt.Sprintf("127.0.0.1:%d", testenv.ReservePort(t)), Token: trustToken, Agent: "first"})
	addr := a.Addr()
	b := newTestHost(t, HostOptions{Listen: addr, Token: trustToken, Agent: "second"})
	s := startSession(t, sessionConfig{host: b})
	op := connectOperatorWith(t, addr, trustToken)
	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	var req aep.Event
	json.Unmarshal(op.until(func(m map[string]any) bool {
		return m["type"] == "attention.requested" && m["agent"] == "second"
	}), &req)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []squatter.Mode{squatter.Naive, squatter.Mimic} {
		sq := squatter.Start(t, addr, mode)
		// B reconnects with backoff: three requests are at least two tries.
		if !sq.WaitRequests(3, waitLimit) {
			t.Fatalf("B never tried the port again:\n%s", sq.Received())
		}
		sq.Close()
		got := sq.Received()
		for _, secret := range []string{trustToken, "Bearer", "access_token", req.ID, "attention.requested", "proof-finish"} {
			if bytes.Contains(got, []byte(secret)) {
				t.Errorf("squatter mode %d received %q:\n%s", mode, secret, got)
			}
		}
	}
}

// TestHostRefusesAPlainRelayOffHost: --relay to a relay without the token
// proof, on plain ws:// to a remote name, stops the bridge at start with an
// error that says why and what to do; the relay got nothing. The same relay
// on loopback is linked.
func TestHostRefusesAPlainRelayOffHost(t *testing.T) {
	t.Parallel()
	sq := squatter.Start(t, "127.0.0.1:0", squatter.Naive)
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, sq.Addr)
	}
	_, err := NewHost(HostOptions{Token: trustToken, Relays: []string{"ws://relay.example:9000/socket"}, Dial: dial})
	if err == nil || !strings.Contains(err.Error(), "relay.example:9000") || !strings.Contains(err.Error(), "TLS") || !strings.Contains(err.Error(), "wss://") {
		t.Fatalf("NewHost: %v; want a refusal naming the relay, the TLS rule and what to do", err)
	}
	if got := sq.Received(); bytes.Contains(got, []byte(trustToken)) || bytes.Contains(got, []byte("Bearer")) {
		t.Fatalf("the refused relay received the token:\n%s", got)
	}
	h := newTestHost(t, HostOptions{Token: trustToken, Relays: []string{"ws://" + sq.Addr + "/socket"}})
	if len(h.links) != 1 {
		t.Fatalf("a loopback relay was not linked: %d links", len(h.links))
	}
}

// TestJoinURLOfAnUnspecifiedAddress: a bridge whose --listen is ":PORT"
// joins the hub on loopback, where the hub's Host check serves it.
func TestJoinURLOfAnUnspecifiedAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, addr, want string }{
		{name: "no host", addr: ":8787", want: "ws://127.0.0.1:8787/socket"},
		{name: "IPv4 any", addr: "0.0.0.0:1", want: "ws://127.0.0.1:1/socket"},
		{name: "IPv6 any", addr: "[::]:1", want: "ws://[::1]:1/socket"},
		{name: "a name", addr: "localhost:2", want: "ws://localhost:2/socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relay.HubURL(tc.addr); got != tc.want {
				t.Fatalf("got %s; want %s", got, tc.want)
			}
		})
	}
}

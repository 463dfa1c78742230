package bridge

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestNegotiationMatchesDirect: an mcp-go client negotiates the same
// protocol version through the bridge as it does straight with each
// server peer, in every era (the go-sdk client's half is in every cell
// of TestInteropMatrix).
func TestNegotiationMatchesDirect(t *testing.T) {
	t.Parallel()
	for _, p := range append(matrixPeers(t), everythingNegotiationPeers(t)...) {
		for _, era := range eras {
			t.Run(p.name+"/"+era, func(t *testing.T) {
				t.Parallel()
				alone := mcpgoDirectVersion(t, p, era)
				o, _ := p.launch(t)
				s := startSession(t, sessionConfig{opts: o, protocol: era})
				if got := s.client.ProtocolVersion(); got != alone {
					t.Errorf("an mcp-go client negotiated %s through the bridge; want %s, as without it", got, alone)
				} else {
					t.Logf("negotiated %s, as without the bridge", got)
				}
				if p.subject != "" {
					return // a matrix peer: every cell checks the go-sdk client
				}
				o, _ = p.launch(t)
				sdkSession := startSDKSession(t, o, era, nil)
				if got, want := sdkSession.cs.InitializeResult().ProtocolVersion, directVersion(t, p.direct(t), era); got != want {
					t.Errorf("a go-sdk client negotiated %s through the bridge; want %s, as without it", got, want)
				}
			})
		}
	}
}

// everythingNegotiationPeers are @modelcontextprotocol/server-everything
// over stdio and streamable HTTP, for the negotiation check only (its
// elicitation is covered by everything_test.go and remote_test.go).
func everythingNegotiationPeers(t *testing.T) []*matrixPeer {
	argv := everything(t)
	stdio, overHTTP := &matrixPeer{name: "server-everything/stdio"}, &matrixPeer{name: "server-everything/http"}
	wireStdio(stdio, argv...)
	base := startEverythingHTTP(t, "streamableHttp")
	wireHTTP(overHTTP, func(*testing.T) string { return base + "/mcp" })
	return []*matrixPeer{stdio, overHTTP}
}

// mcpgoDirectVersion connects an mcp-go client straight to p and returns
// the protocol version they negotiate.
func mcpgoDirectVersion(t *testing.T, p *matrixPeer, era string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c := client.NewClient(p.mcpgoDirect(t), client.WithProtocolVersion(era), client.WithDiscoverTimeout(waitLimit)) // as startSession's
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("a direct mcp-go client: %v", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = era
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-client", Version: "1.2.3"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("a direct mcp-go client (%s): %v", era, err)
	}
	return c.ProtocolVersion()
}

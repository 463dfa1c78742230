package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// TestRequestEndEndsItsQuestions: a go-sdk client cancels its tools/call
// while the question it caused is open. Where the bridge knows the link
// (the elicitation came on that call's HTTP response stream, or it is a
// 2026-07-28 input_required round) the question is dismissed on the bus,
// and a server still waiting for an ElicitResult gets cancel.
func TestRequestEndEndsItsQuestions(t *testing.T) {
	t.Parallel()
	peers := matrixPeers(t)
	tests := []struct {
		name string
		peer *matrixPeer
		era  string
		// want is what the server received for its elicitation: cancel
		// for an elicitation/create, nothing for a round (no retry).
		want []string
	}{
		{name: "2025-11-25 over HTTP", peer: peers[1], era: "2025-11-25", want: []string{`{"action":"cancel"}`}},
		{name: "2026-07-28 over HTTP", peer: peers[2], era: "2026-07-28"},
		{name: "2026-07-28 over stdio", peer: peers[0], era: "2026-07-28"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, received := tt.peer.launch(t)
			s := startSDKSession(t, o, tt.era, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: tt.peer.tool, Arguments: tt.peer.args})
				done <- err
			}()
			req := s.next("attention.requested")
			cancel() // the client gives up: notifications/cancelled
			<-done
			resolved := s.next("attention.resolved")
			var r aep.AttentionResolved
			json.Unmarshal(resolved.Data, &r)
			if resolved.Subject != req.ID || r.Resolution != "dismissed" {
				t.Fatalf("got %s about %s; want the question %s dismissed", resolved.Data, resolved.Subject, req.ID)
			}
			if ack := s.respond(req.ID, aep.Answer{Values: tt.peer.valid}); !strings.Contains(ack, `"reason":"refused"`) {
				t.Errorf("a late answer got %s; want refused", ack)
			}
			s.close()
			if diff := cmp.Diff(tt.want, receivedElicitResults(received())); diff != "" {
				t.Errorf("what the server received (-want +got):\n%s", diff)
			}
		})
	}
}

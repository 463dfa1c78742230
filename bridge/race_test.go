package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// raceClient is a go-sdk client's elicitation handler under test: it
// reports each copy it gets and answers with decline, at once (it wins)
// or only once released (it loses).
type raceClient struct {
	got       chan struct{}
	release   chan struct{}
	withdrawn chan struct{}
	once      sync.Once
}

func newRaceClient() *raceClient {
	return &raceClient{got: make(chan struct{}, 4), release: make(chan struct{}), withdrawn: make(chan struct{})}
}

func (c *raceClient) handle(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	c.got <- struct{}{}
	select {
	case <-c.release:
	case <-ctx.Done():
		// The bridge withdrew the copy (notifications/cancelled): the
		// user answers all the same, as a real one might, too late.
		c.once.Do(func() { close(c.withdrawn) })
		<-c.release
	}
	return &sdk.ElicitResult{Action: "decline"}, nil
}

// TestRaces runs the race between the MCP client and an operator under
// route both, for each winner, in each era, over stdio and HTTP, against
// go-sdk peers on both sides.
//
//   - 2025 revisions: the loser's copy is withdrawn and the result comes
//     at once. An operator's win withdraws the client's copy with
//     notifications/cancelled; the client's win refuses the operator.
//   - 2026-07-28: an operator's win makes the bridge retry upstream once;
//     the client's own retry, whatever it carries, gets that final result
//     and never reaches the server. The client's win resolves the
//     operators' question as oob, and its retry goes upstream once.
//
// Every answer is on the bus: the winner's attention.answered, the
// loser's x.aep-mcp-bridge.attention.outraced.
func TestRaces(t *testing.T) {
	t.Parallel()
	peers := matrixPeers(t)[:3] // go-sdk over stdio, stateful and stateless HTTP
	for _, era := range eras {
		for _, p := range peers {
			if p.cannot[era] != "" || (era == "2026-07-28" && p.name == "go-sdk/http") {
				continue // no elicitation there, or 2025-11-25 in disguise (covered by its own era)
			}
			for _, winner := range []string{"operator", "client"} {
				t.Run(p.name+"/"+era+"/"+winner+"-wins", func(t *testing.T) {
					t.Parallel()
					raceCell(t, p, era, winner)
				})
			}
		}
	}
}

func raceCell(t *testing.T, p *matrixPeer, era, winner string) {
	o, received := p.launch(t)
	c := newRaceClient()
	if winner == "client" {
		close(c.release)
	}
	s := startSDKSession(t, o, era, c.handle)
	if v := s.cs.InitializeResult().ProtocolVersion; v != era {
		t.Fatalf("negotiated %s; want %s", v, era)
	}
	call := s.call(p.tool, p.args)
	req := s.next("attention.requested")
	waitSignal(t, c.got, "the client's copy of the question")
	var want, wantText string
	switch winner {
	case "operator":
		mustAccept(t, s.respond(req.ID, aep.Answer{Values: p.valid}))
		want, wantText = goAccept, goAccept
		if era != "2026-07-28" {
			waitSignal(t, c.withdrawn, "notifications/cancelled for the client's copy")
		}
		close(c.release) // the client answers, too late
	case "client":
		want, wantText = `{"action":"decline"}`, `{"action":"decline"}`
	}
	r := <-call
	if r.err != nil || r.res.IsError {
		t.Fatalf("tools/call: %v %s", r.err, r.text())
	}
	if r.text() != wantText {
		t.Errorf("the client got %s; want %s", r.text(), wantText)
	}
	answered := s.next("attention.answered")
	var a aep.AttentionAnswered
	json.Unmarshal(answered.Data, &a)
	wantBy, wantVia := "token holder", "control" // who submitted it, not the command's agent
	if winner == "client" {
		wantBy, wantVia = "gosdk-client", "oob"
	}
	if a.By != wantBy || a.Via != wantVia {
		t.Errorf("attention.answered by %q via %q; want %q via %q", a.By, a.Via, wantBy, wantVia)
	}
	if winner == "client" {
		// The operator's answer after the client won: refused, recorded.
		if ack := s.respond(req.ID, aep.Answer{Values: p.valid}); !strings.Contains(ack, `"reason":"refused"`) {
			t.Errorf("the operator's late answer got %s; want refused", ack)
		}
	}
	lost := s.next(attention.TypeOutraced)
	var o2 attention.Outraced
	json.Unmarshal(lost.Data, &o2)
	if o2.LostTo != answered.ID || o2.WonBy != wantBy || lost.Subject != req.ID {
		t.Errorf("outraced %s; want it about %s, lost to %s won by %s", lost.Data, req.ID, answered.ID, wantBy)
	}
	s.close()
	if diff := cmp.Diff([]string{want}, receivedElicitResults(received())); diff != "" {
		t.Errorf("what the server received: exactly one answer, the winner's (-want +got):\n%s", diff)
	}
}

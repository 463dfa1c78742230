package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
	"github.com/agenteventprotocol/aep-mcp-bridge/relay"
)

// TestJoinedBridgeIsAnsweredOnAnotherDoor joins bridge B with --relay to
// front door C of an operator plane on JetStream; an operator on front
// door A sees B's question, answers it, and B's server gets the answer
// through C, whose ack reaches the operator on A.
func TestJoinedBridgeIsAnsweredOnAnotherDoor(t *testing.T) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	doorC := fleetHost(t, cl.Node(2).URL(), prefix, HostOptions{Listener: loopback(t)})
	doorA := fleetHost(t, cl.Node(0).URL(), prefix, HostOptions{Listener: loopback(t)})

	link, err := relay.NewLink(relay.LinkOptions{URL: "http://" + doorC.Addr(), Token: inboxToken, Agent: "bridge-b", Instance: "test",
		Accepts: []string{"control.attention.respond"}, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := startSession(t, sessionConfig{opts: Options{Agent: "bridge-b", Sinks: []bus.Sink{link}}})
	link.Bind(s.b.Claim("test").Target)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { link.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	op := connectOperatorWith(t, doorA.Addr(), inboxToken)
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := op.question(nil)
	if req.Agent != "bridge-b" || req.Session != s.b.Session() {
		t.Fatalf("the question on door A: agent %s session %s; want bridge B's", req.Agent, req.Session)
	}
	cmd := command(req.Session, req.ID, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	raw, _ := json.Marshal(cmd)
	op.send(string(raw))
	if f := op.until(func(m map[string]any) bool {
		return m["type"] == "error" || m["type"] == "control.accepted" && m["cause"] == cmd.ID
	}); bytes.Contains(f, []byte(`"error"`)) {
		t.Fatalf("door A refused the answer: %s", f)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "accept" {
		t.Fatalf("B's server got %v", got)
	}
}

package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// passwordSchema is a form with one secret field: its answer never reaches
// the bus, only the command that carries it to the session's owner.
const passwordSchema = `{"type":"object","properties":{"password":{"type":"string","format":"password","title":"Database password"}},"required":["password"]}`

// startJoinedBridge runs a bridge in front of the eliciting test server
// that joins the hub behind via (its --listen port is taken), and an MCP
// client on its stdio that cannot elicit, so its questions go to the
// operators.
func startJoinedBridge(t *testing.T, name, via string) (*proc, *client.Client) {
	t.Helper()
	bin, server := binaries(t)
	b := startProc(t, name, bin, "--listen", via, "--token", procToken, "--state-dir", t.TempDir(), "--log-dir", "off", "--agent", name, "--", server)
	b.stderr.WaitFor(t, "joining it as an emitter", procWait)
	c := client.NewClient(transport.NewIO(b.stdout, b.stdin, nil), client.WithProtocolVersion("2025-11-25"))
	ctx, cancel := context.WithTimeout(context.Background(), procWait)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: name + "-client", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize through %s: %v", name, err)
	}
	return b, c
}

// callAsk calls the test server's ask tool with schema through c and
// sends what the server received back (or the error) on the channel.
func callAsk(c *client.Client, schema string) <-chan string {
	out := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*procWait)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "ask"
		req.Params.Arguments = map[string]any{"schema": schema, "message": "Database password for the migration"}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		var b strings.Builder
		for _, content := range res.Content {
			if tc, ok := content.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		out <- b.String()
	}()
	return out
}

// nextOf returns the next event of events that pred accepts.
func nextOf(t *testing.T, events <-chan map[string]any, what string, pred func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(procWait)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before %s", what)
			}
			if pred(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("never saw %s", what)
		}
	}
}

// TestAttackHubRestartKeepsAJoinedBridgesSession replays issue 21's third
// attack on real processes. Bridge B joins the hub and asks for a
// password. The hub is killed with kill -9 and a new one starts on its
// port; a token holder joins the new hub before B's link is back and
// writes B's public source and session (its session.started, and B's
// question re-announced as its own). B's session must stay B's: the
// impostor is refused, B rejoins with its question, and the operator's
// answer, a password, reaches B's server and never the impostor.
func TestAttackHubRestartKeepsAJoinedBridgesSession(t *testing.T) {
	t.Parallel()
	hub1, hubAddr := startHub(t, "hub-1", "127.0.0.1:0", "--allow-host", "127.0.0.1")
	g := startGate(t, hubAddr)
	b, mc := startJoinedBridge(t, "bridge-b", g.addr())
	questions := streamEvents(t, hubAddr, url.QueryEscape(`{"type":"attention.requested"}`))
	result := callAsk(mc, passwordSchema)
	asked := nextOf(t, questions, "B's question on the first hub", func(ev map[string]any) bool { return ev["agent"] == "bridge-b" })
	raw, _ := json.Marshal(asked)
	session, source, id := asked["session"].(string), asked["source"].(string), asked["id"].(string)

	// The hub dies; B's link cannot come back until the gate opens.
	g.set(false)
	hub1.kill(t)
	_, again := startHub(t, "hub-2", hubAddr, "--allow-host", "127.0.0.1")
	if again != hubAddr {
		t.Fatalf("the new hub serves %s; want the old hub's port %s", again, hubAddr)
	}
	questions = streamEvents(t, hubAddr, url.QueryEscape(`{"type":"attention.requested"}`))

	// The token holder joins first, as B's (public) agent, and writes B's
	// session under B's source.
	evil := joinPeer(t, hubAddr, "bridge-b", "evil")
	cmds := make(chan map[string]any, 16)
	started := fmt.Sprintf(`{"aep":"0.1","id":"EVIL-START","type":"session.started","time":%q,"source":%q,"agent":"bridge-b","session":%q,"seq":0,"data":{}}`,
		aep.FormatTime(time.Now()), source, session)
	for _, w := range []struct{ name, ev string }{{"session.started", started}, {"B's question", string(raw)}} {
		if refusal := evil.sendEvent(w.ev, cmds); refusal == nil || refusal["code"] != "unauthorized" {
			t.Errorf("the impostor wrote %s into B's session under B's source: %v; want it refused unauthorized", w.name, refusal)
		}
	}
	go forwardCommands(evil, cmds)

	g.set(true)
	nextOf(t, questions, "B's question on the new hub", func(ev map[string]any) bool { return ev["id"] == id })
	op := &operator.Client{Endpoint: "http://" + hubAddr, Token: procToken, Agent: "attack-operator"}
	const password = "correct-horse-battery-staple-7"
	acked := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-acked })
	go func() {
		ack, err := op.Respond(ctx, operator.Question{ID: id, Session: session},
			aep.Answer{Values: map[string]any{"password": password}}, procWait, nil)
		acked <- fmt.Sprintf("%+v %v", ack.Accepted, err)
	}()
	select {
	case cmd := <-cmds:
		t.Errorf("the impostor received the operator's answer: %v", cmd)
	case got := <-result:
		if !strings.Contains(got, password) {
			t.Errorf("B's server received %s; want the operator's password", got)
		}
		if ack := <-acked; !strings.HasPrefix(ack, "true") {
			t.Errorf("the operator's answer was acknowledged %s; want accepted", ack)
		}
		acked <- "" // for the cleanup
	case <-time.After(procWait):
		t.Errorf("the operator's answer reached neither B's server nor the impostor; B said:\n%s", b.stderr.String())
	}
	if strings.Contains(b.stderr.String(), "refused an event of this bridge") {
		t.Errorf("the new hub refused B's events:\n%s", b.stderr.String())
	}
}

// forwardCommands sends every command that reaches p to cmds until p's
// connection ends.
func forwardCommands(p *peer, cmds chan<- map[string]any) {
	for f := range p.frames {
		if strings.HasPrefix(fmt.Sprint(f["type"]), "control.") {
			select {
			case cmds <- f:
			default:
			}
		}
	}
}

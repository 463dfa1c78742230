package gateway

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// fleetGateway runs a gateway whose operator plane is on the cluster at
// urls, under prefix, with ho's other options.
func fleetGateway(t *testing.T, urls, prefix string, ho bridge.HostOptions) *gw {
	t.Helper()
	return fleetGatewayWith(t, urls, prefix, ho, nil)
}

// fleetGatewayWith is fleetGateway with the plane's options changed by
// tweak, when it is not nil.
func fleetGatewayWith(t *testing.T, urls, prefix string, ho bridge.HostOptions, tweak func(*natsplane.Options)) *gw {
	t.Helper()
	ho.NATS = &natsplane.Options{URLs: urls, User: testnats.User, Password: testnats.Password, Prefix: prefix, Heartbeat: time.Second,
		StoreBytes: 16 << 20} // JetStream reserves it, on a cluster that tests share
	if tweak != nil {
		tweak(ho.NATS)
	}
	return startGatewayHost(t, Options{Session: sessionOpts(elicit.RouteRemote)}, ho)
}

// ask calls the test server's ask tool as an MCP client of g; the
// server's result text (what the operator answered) arrives on the
// channel.
func ask(t *testing.T, cs *sdk.ClientSession, message string) <-chan string {
	t.Helper()
	res := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	go func() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": message}})
		if err != nil {
			res <- "error: " + err.Error()
			return
		}
		res <- sdkText(r)
	}()
	return res
}

// result waits for a tools/call result.
func result(t *testing.T, what string, res <-chan string) string {
	t.Helper()
	select {
	case got := <-res:
		return got
	case <-time.After(waitLimit):
		t.Fatalf("no result of %s", what)
		return ""
	}
}

// TestFleetAnswerOnAnotherGateway: three gateways, each on another node
// of a three-node cluster; a question raised by a client of gateway C is
// on every gateway's inbox, an operator on gateway A answers it, and the
// answer reaches C's client. Every gateway sees it resolved.
func TestFleetAnswerOnAnotherGateway(t *testing.T) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	a := fleetGateway(t, cl.Node(0).URL(), prefix, bridge.HostOptions{})
	b := fleetGateway(t, cl.Node(1).URL(), prefix, bridge.HostOptions{})
	c := fleetGateway(t, cl.Node(2).URL(), prefix, bridge.HostOptions{})
	wa, wb := a.watch(), b.watch()
	res := ask(t, goSDKSession(t, c, "client-of-c", "2025-11-25", nil), "Deploy across the fleet?")
	q := wa.question(t, "Deploy across the fleet?")
	wb.question(t, "Deploy across the fleet?")
	a.answer(t, q, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	if got := result(t, "the call on C", res); !strings.Contains(got, `"action":"accept"`) || !strings.Contains(got, `"staging"`) {
		t.Fatalf("C's server received %s; want the accept A's operator sent", got)
	}
	for name, w := range map[string]*watcher{"A": wa, "B": wb} {
		w.waitFor(t, name+" seeing the question resolved", func(w *watcher) bool { return w.resolved[q.Subject] != "" || w.resolved[q.ID] != "" })
	}
}

// TestFleetNodeKilledMidQuestion kills, with a question open, the NATS
// node that leads the plane's events stream and that the asking gateway
// is connected to: the open question and one asked after the kill are
// both answered from another gateway, both answers reach the client, and
// a gateway's inbox opened after the kill replays every question.
func TestFleetNodeKilledMidQuestion(t *testing.T) {
	cl := testnats.Start(t) // a node is killed: a cluster of its own
	prefix := testnats.Prefix()
	a := fleetGateway(t, cl.URLs(), prefix, bridge.HostOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	leader, err := cl.WaitLeader(ctx, prefix+"_events")
	if err != nil {
		t.Fatal(err)
	}
	c := fleetGateway(t, cl.Node(leader).URL(), prefix, bridge.HostOptions{})
	b := fleetGateway(t, cl.Node((leader+1)%cl.Len()).URL(), prefix, bridge.HostOptions{})
	wa := a.watch()
	cs := goSDKSession(t, c, "client-of-c", "2025-11-25", nil)
	before := ask(t, cs, "Asked before the kill?")
	q1 := wa.question(t, "Asked before the kill?")

	cl.Kill(leader)
	after := ask(t, cs, "Asked after the kill?")
	q2 := wa.question(t, "Asked after the kill?")
	a.answer(t, q1, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	a.answer(t, q2, aep.Answer{Values: map[string]any{"environment": "production", "confirm": true}})
	for what, r := range map[string]struct {
		res  <-chan string
		want string
	}{"before": {before, "staging"}, "after": {after, "production"}} {
		if got := result(t, "the call asked "+what+" the kill", r.res); !strings.Contains(got, `"action":"accept"`) || !strings.Contains(got, `"`+r.want+`"`) {
			t.Fatalf("the question asked %s the kill: the server received %s; want the operator's accept of %s", what, got, r.want)
		}
	}
	wb := b.watch() // from=all: the history, as any inbox opened now
	for _, q := range []*aep.Event{q1, q2} {
		wb.waitFor(t, "B replaying "+q.ID+" asked and resolved", func(w *watcher) bool {
			asked := false
			for _, ev := range w.questions {
				asked = asked || ev.ID == q.ID
			}
			return asked && (w.resolved[q.ID] != "" || w.resolved[q.Subject] != "")
		})
	}
}

// TestFleetAuthorityAcrossGateways: named operators of the fleet's
// identity document are held to their scope on every gateway, for a
// question raised on another; a holder of the cluster's credentials
// without the fleet's token cannot answer it through the plane, nor a
// client with a wrong bearer token through a gateway; the operator in
// scope then answers it, and the answer reaches the client.
func TestFleetAuthorityAcrossGateways(t *testing.T) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	// The named operators live on the plane: every gateway of the fleet
	// authenticates the same ones.
	ops := addFleetOperator(t, cl.URLs(), prefix, "ops", "elicit-test-*")
	billing := addFleetOperator(t, cl.URLs(), prefix, "billing", "billing-*")
	ids := store.Path(t.TempDir())
	a := fleetGateway(t, cl.Node(0).URL(), prefix, bridge.HostOptions{Identities: ids})
	c := fleetGateway(t, cl.Node(2).URL(), prefix, bridge.HostOptions{Identities: ids})
	wa := a.watch()
	res := ask(t, goSDKSession(t, c, "client-of-c", "2025-11-25", nil), "Pay the invoice?")
	q := wa.question(t, "Pay the invoice?")

	// Everyone but ops answers staging; ops answers production.
	refused := func(who string, client *operator.Client, wantReason string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		ack, err := client.Respond(ctx, operator.Question{ID: q.ID, Session: q.Session},
			aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}}, 5*time.Second, nil)
		if err != nil || ack.Accepted || ack.Reason != wantReason {
			t.Fatalf("%s's answer on gateway A: %v, accepted %v, reason %q; want refused %q", who, err, ack.Accepted, ack.Reason, wantReason)
		}
	}
	refused("billing", &operator.Client{Endpoint: a.endpoint, Token: billing}, "unauthorized")
	checkCtx, checkCancel := context.WithTimeout(context.Background(), waitLimit)
	defer checkCancel()
	if err := (&operator.Client{Endpoint: a.endpoint, Token: "not-the-token-of-this-fleet-at-all"}).Check(checkCtx); err == nil {
		t.Fatal("gateway A let in a client with a wrong token")
	}

	// An impostor joins the plane with the cluster's credentials, its own
	// key and a token of its own: the owner cannot open its command, and
	// sends it no reply.
	key, err := proof.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	imp, err := natsplane.Open(ctx, natsplane.Options{URLs: cl.URLs(), User: testnats.User, Password: testnats.Password, Prefix: prefix,
		Token: "an-impostor-who-has-the-cluster-but-not-the-fleet", Key: key, Agent: "impostor", Instance: "impostor",
		Heartbeat: time.Second, StoreBytes: 16 << 20}) // the plane's own bound: a larger one would grow its reservation
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Kill()
	cmd, raw := planetest.Respond(q.Session, q.ID, map[string]any{"environment": "staging", "confirm": true})
	impCtx, impCancel := context.WithTimeout(ctx, 3*time.Second) // the owner never replies: wait this long
	defer impCancel()
	if code, _ := imp.Command(impCtx, plane.TokenHolder(), cmd, raw); code == "" {
		t.Fatal("the impostor's command was taken; want it refused")
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), waitLimit)
	defer cancel2()
	ack, err := (&operator.Client{Endpoint: a.endpoint, Token: ops}).Respond(ctx2, operator.Question{ID: q.ID, Session: q.Session},
		aep.Answer{Values: map[string]any{"environment": "production", "confirm": true}}, waitLimit, nil)
	if err != nil || !ack.Accepted {
		t.Fatalf("ops's answer on gateway A: %v %s %s; want accepted", err, ack.Reason, ack.Detail)
	}
	if got := result(t, "the call on C", res); !strings.Contains(got, `"production"`) {
		t.Fatalf("C's server received %s; want ops's answer, and nobody else's", got)
	}
}

// addFleetOperator adds a named operator that answers the servers of
// scope to the identities of the plane prefix on the cluster at urls,
// and returns its credential.
func addFleetOperator(t *testing.T, urls, prefix, name, scope string) string {
	t.Helper()
	s, err := identity.ParseScope([]string{scope})
	if err != nil {
		t.Fatal(err)
	}
	text, v, err := identity.NewCredential(identity.KindOperator, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ids, err := natsplane.OpenIdentities(ctx, natsplane.Options{URLs: urls, User: testnats.User, Password: testnats.Password, Prefix: prefix, Token: aepToken})
	if err != nil {
		t.Fatal(err)
	}
	defer ids.Close()
	err = ids.Update(ctx, func(d *identity.Document) error {
		return d.AddOperator(identity.Operator{Name: name, Can: identity.Answer, Servers: s, Created: time.Now(), Credential: &v})
	})
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// TestFleetGatewaysGo: the gateway serving an operator's inbox goes
// away, and the operator, on another gateway, sees the same open set and
// answers there; then the asking gateway shuts down with a question
// open, and every other gateway sees its session end and the question
// leave the open set (its client's call is dismissed with it).
func TestFleetGatewaysGo(t *testing.T) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	a := fleetGateway(t, cl.Node(0).URL(), prefix, bridge.HostOptions{})
	b := fleetGateway(t, cl.Node(1).URL(), prefix, bridge.HostOptions{})
	c := fleetGateway(t, cl.Node(2).URL(), prefix, bridge.HostOptions{})
	cs := goSDKSession(t, c, "client-of-c", "2025-11-25", nil)
	first := ask(t, cs, "Seen from B, then from A?")
	second := ask(t, cs, "Open when C goes?")
	wa := a.watch()
	q1, q2 := wa.question(t, "Seen from B, then from A?"), wa.question(t, "Open when C goes?")
	onBHub := planetest.Subscribe(t, b.host.Hub()) // B's hub, in the process: it ends with B
	for _, q := range []*aep.Event{q1, q2} {
		onBHub.Until("the question on B", planetest.Is("attention.requested", q.ID))
	}
	openOn := func(g *gw) map[string]bool {
		out := map[string]bool{}
		for _, id := range g.openIDs(t) {
			out[id] = true
		}
		return out
	}
	onB := openOn(b)
	if !onB[q1.ID] || !onB[q2.ID] || len(onB) != 2 {
		t.Fatalf("B's open set %v; want the two questions", onB)
	}
	b.shutDown(t)
	if onA := openOn(a); len(onA) != len(onB) || !onA[q1.ID] || !onA[q2.ID] {
		t.Fatalf("A's open set %v once B is gone; want B's, %v", onA, onB)
	}
	a.answer(t, q1, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	if got := result(t, "the call answered on A", first); !strings.Contains(got, `"staging"`) {
		t.Fatalf("C's server received %s; want the accept sent on A", got)
	}

	c.shutDown(t)
	wa.waitFor(t, "A seeing C's session end and its question settled", func(w *watcher) bool {
		return w.ended[q2.Session] != "" && w.resolved[q2.ID] != ""
	})
	if onA := openOn(a); len(onA) != 0 {
		t.Fatalf("A's open set %v once C is gone; want none", onA)
	}
	if got := result(t, "the call left open on C", second); strings.Contains(got, `"accept"`) {
		t.Fatalf("the question left open when C went was accepted: %s", got)
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
)

// crash takes g off the operator plane as a killed process leaves it:
// its member stops without a word (no session ends, no "leaving"
// heartbeat, its consumers left to the cluster), so the other gateways
// learn it is gone only when its heartbeats stop. With endpoint, its AEP
// endpoint and MCP listener go too, dropping every connection.
func (g *gw) crash(t *testing.T, endpoint bool) {
	t.Helper()
	m, ok := g.host.Plane().(*natsplane.Member)
	if !ok {
		t.Fatalf("the gateway's plane is %T; want the NATS plane", g.host.Plane())
	}
	m.Kill()
	if !endpoint {
		return
	}
	g.shutDown(t)
}

// shutDown closes the gateway and then its host, as a gateway that shuts
// down does: its sessions end, and it leaves the operator plane.
func (g *gw) shutDown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := g.srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.host.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// openIDs are the ids of the questions g's endpoint lists open.
func (g *gw) openIDs(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	qs, err := g.operatorClient().Pending(ctx)
	if err != nil {
		t.Fatalf("pending: %v", err)
	}
	var ids []string
	for _, q := range qs {
		ids = append(ids, q.ID)
	}
	slices.Sort(ids)
	return ids
}

// waitGone waits until g's roster no longer lists session: g took the
// gateway that owns it for gone (three heartbeats without one). The
// roster signals no change, so it is looked at every few milliseconds.
func (g *gw) waitGone(t *testing.T, session string) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for slices.ContainsFunc(g.host.Plane().Sessions(), func(b plane.Binding) bool { return b.Session == session }) {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("the gateway still lists session %s after %v: its owner was never taken for gone", session, waitLimit)
		}
	}
}

// testClock is a hub's clock a test moves ahead.
type testClock struct{ ahead atomic.Int64 }

func (c *testClock) now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// setTo moves the clock to at.
func (c *testClock) setTo(at time.Time) { c.ahead.Store(int64(time.Until(at))) }

// TestFleetAskingGatewayKilled: three gateways on the shared cluster; the
// gateway whose client asked is killed with its question open. Its
// questions follow the abandoned rule on the others: still open (nobody
// else may settle them, and it may come back) until more than
// bus.ExpiredGrace past their expires_at, then out of the open set and
// in the history with no end, which the inbox shows as abandoned. An
// answer to it is refused, not lost silently; and the operator's inbox on
// another gateway keeps working: a question asked there is answered.
// Gateway A's hub runs on a clock the test moves past the expiry, rather
// than waiting the ten minutes of the question and the minute of grace.
func TestFleetAskingGatewayKilled(t *testing.T) {
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	clock := &testClock{}
	a := fleetGatewayWith(t, cl.Node(0).URL(), prefix, bridge.HostOptions{}, func(o *natsplane.Options) { o.Hub.Now = clock.now })
	b := fleetGateway(t, cl.Node(1).URL(), prefix, bridge.HostOptions{})
	c := fleetGateway(t, cl.Node(2).URL(), prefix, bridge.HostOptions{})
	wa := a.watch()
	ask(t, goSDKSession(t, c, "client-of-c", "2025-11-25", nil), "Open when C is killed?")
	q := wa.question(t, "Open when C is killed?")
	var data aep.AttentionRequested
	if err := json.Unmarshal(q.Data, &data); err != nil || data.ExpiresAt == "" {
		t.Fatalf("the question's data %s: %v; want an expires_at", q.Data, err)
	}
	expires, err := time.Parse(time.RFC3339Nano, data.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}

	c.crash(t, false)
	a.waitGone(t, q.Session)
	if got := a.openIDs(t); !slices.Equal(got, []string{q.ID}) {
		t.Fatalf("A's open set once C is gone, before the question expires: %v; want [%s]: only its owner settles it", got, q.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ack, err := b.operatorClient().Respond(ctx, operator.Question{ID: q.ID, Session: q.Session},
		aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}}, waitLimit, nil)
	if err == nil && ack.Accepted {
		t.Fatal("an answer to the killed gateway's question was accepted; want it refused, its owner gone")
	}

	clock.setTo(expires.Add(bus.ExpiredGrace + time.Second))
	if got := a.openIDs(t); len(got) != 0 {
		t.Fatalf("A's open set more than %v past the question's expires_at: %v; want it abandoned", bus.ExpiredGrace, got)
	}
	if got := b.openIDs(t); !slices.Equal(got, []string{q.ID}) { // B's clock is the real one
		t.Fatalf("B's open set before the question expires: %v; want [%s]", got, q.ID)
	}
	history := a.watch() // from=all: what an inbox opened now reads
	history.waitFor(t, "A's history holding the question", func(w *watcher) bool {
		return slices.ContainsFunc(w.questions, func(ev *aep.Event) bool { return ev.ID == q.ID })
	})
	history.mu.Lock()
	end, ended := history.resolved[q.ID], history.ended[q.Session]
	history.mu.Unlock()
	if end != "" || ended != "" {
		t.Fatalf("A's history says the question ended (%q) or its session did (%q); nobody may have ended it", end, ended)
	}

	// The inbox on B keeps working: its own client's question is
	// answered on A and reaches it.
	res := ask(t, goSDKSession(t, b, "client-of-b", "2025-11-25", nil), "Asked on B after C was killed?")
	q2 := wa.question(t, "Asked on B after C was killed?")
	a.answer(t, q2, aep.Answer{Values: map[string]any{"environment": "production", "confirm": true}})
	if got := result(t, "the call on B", res); !strings.Contains(got, `"production"`) {
		t.Fatalf("B's server received %s; want the answer given on A", got)
	}
}

// TestFleetInboxGatewayKilled: the gateway serving an operator's inbox,
// in Chromium, is killed with two questions of another gateway open;
// the operator opens another gateway's inbox and sees the same open
// set, and declines one of them there: the decline reaches the client
// that asked.
func TestFleetInboxGatewayKilled(t *testing.T) {
	exe := chromium(t)
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	withInbox := bridge.HostOptions{Root: inbox.Handler()}
	a := fleetGateway(t, cl.Node(0).URL(), prefix, withInbox)
	b := fleetGateway(t, cl.Node(1).URL(), prefix, withInbox)
	c := fleetGateway(t, cl.Node(2).URL(), prefix, bridge.HostOptions{})
	cs := goSDKSession(t, c, "client-of-c", "2025-11-25", nil)
	first := ask(t, cs, "First, seen from B then from A?")
	ask(t, cs, "Second, seen from B then from A?")
	wa := a.watch()
	q1, q2 := wa.question(t, "First, seen from B then from A?"), wa.question(t, "Second, seen from B then from A?")

	ctx := browser(t, exe)
	cardOf := func(q *aep.Event) string { return `#pending article[data-qid="` + q.ID + `"]` }
	inboxOn := func(g *gw) chromedp.Action[chromedp.Void] {
		return chromedp.Navigate(g.endpoint + "/#token=" + aepToken)
	}
	run(t, ctx, chromedp.EmulateViewport(1280, 900), inboxOn(b),
		chromedp.WaitVisible(chromedp.CSS(cardOf(q1))), chromedp.WaitVisible(chromedp.CSS(cardOf(q2))))
	onB := pageText(t, ctx, "#count")

	b.crash(t, true)
	run(t, ctx, inboxOn(a), chromedp.WaitVisible(chromedp.CSS(cardOf(q1))), chromedp.WaitVisible(chromedp.CSS(cardOf(q2))))
	if onA := pageText(t, ctx, "#count"); onA != onB || onA != "2 open questions" {
		t.Fatalf("A's inbox counts %q; B's counted %q; want the same two open questions", onA, onB)
	}
	run(t, ctx, chromedp.Click(chromedp.CSS(cardOf(q1)+` .actions button:nth-of-type(2)`)),
		chromedp.WaitVisible(chromedp.CSS(`#history article[data-qid="`+q1.ID+`"]`)))
	if got := result(t, "the call declined on A", first); !strings.Contains(got, `"action":"decline"`) {
		t.Fatalf("C's server received %s; want the decline given in A's inbox", got)
	}
}

// browser starts a headless Chromium for the test and returns its first
// tab's context.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 4*waitLimit) // a failure guard for a loaded machine
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	return ctx
}

// run runs actions in the tab, failing the test on an error.
func run(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// pageText is the text of the element sel.
func pageText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

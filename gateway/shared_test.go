package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// pending is a stateless request whose response a test awaits while it
// does other things.
type pending struct {
	status int
	answer string // the JSON-RPC response, "" when none came
	err    error
}

// start POSTs a tools/call of tool on its own goroutine, under ctx, and
// returns where its outcome arrives: the response message, read from
// one JSON body or from the event stream.
func (c *modern) start(ctx context.Context, id, tool string, args map[string]any) <-chan pending {
	out := make(chan pending, 1)
	req, err := http.NewRequestWithContext(ctx, "POST", c.g.mcpURL, strings.NewReader(c.body(id, tool, args, nil, nil)))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header = c.header(tool)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- pending{err: err}
			return
		}
		defer resp.Body.Close()
		p := pending{status: resp.StatusCode}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := strings.TrimPrefix(sc.Text(), "data: ")
			if env, ok := parse([]byte(line)); ok && env.isResponse() {
				p.answer = line
			}
		}
		p.err = sc.Err()
		out <- p
	}()
	return out
}

// outcome waits for a started request's outcome.
func outcome(t *testing.T, what string, ch <-chan pending) pending {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(waitLimit):
		t.Fatalf("%s: no response", what)
	}
	return pending{}
}

// wantError checks that a response is a JSON-RPC error under id whose
// message says why.
func wantError(t *testing.T, what, raw, id, why string) {
	t.Helper()
	var a struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &a) != nil || a.Error == nil || string(a.ID) != id || !strings.Contains(a.Error.Message, why) {
		t.Errorf("%s: got %q; want a JSON-RPC error under id %s saying %q", what, raw, id, why)
	}
}

// TestSharedServerCrash: stateless requests of one client share one
// server process, each under its own id upstream, though both use id 1
// here. When the server exits (the crash tool), the request still in
// flight (one waiting for an operator) gets a JSON-RPC error naming the
// exit, under its own id, and its question is settled; the next request
// is served by a new process.
func TestSharedServerCrash(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	w := g.watch()
	c := &modern{t: t, g: g, name: "crash-test"}
	waiting := c.start(context.Background(), `1`, "mrtr-ask", nil)
	q := w.question(t, "Who deploys?")
	crash := answerOf(t, c.call(`1`, "crash", map[string]any{"code": 3}, nil, nil))
	wantError(t, "the crashing call", crash.raw, `1`, "exited")
	p := outcome(t, "the request in flight at the crash", waiting)
	if p.err != nil {
		t.Fatalf("the request in flight at the crash: %v", p.err)
	}
	wantError(t, "the request in flight at the crash", p.answer, `1`, "exited")
	w.waitFor(t, "the question of the request in flight to be settled", func(w *watcher) bool { return w.resolved[q.ID] != "" })
	g.waitSessions(t, 0)
	if got := answerOf(t, c.call(`1`, "echo", map[string]any{"message": "after the crash"}, nil, nil)); got.text() != "after the crash" {
		t.Errorf("echo after the crash: got %s; want its message from a new server process", got.raw)
	}
	g.sharedSessions(t, 1)
}

// TestSharedServersAreOneEachClient: two named clients never share a
// server process. Alice's server exits (the crash tool) while Bob's
// request waits for an operator on his; his request goes on, and gets
// the operator's answer, and each client's next request is served.
func TestSharedServersAreOneEachClient(t *testing.T) {
	ids := newIdentities(t)
	aliceCred, bobCred := ids.add("alice", time.Time{}), ids.add("bob", time.Time{})
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), Identities: ids.path})
	w := g.watch()
	alice := &modern{t: t, g: g, name: "alice-app", token: aliceCred}
	bob := &modern{t: t, g: g, name: "bob-app", token: bobCred}
	waiting := bob.start(context.Background(), `1`, "mrtr-ask", nil)
	q := w.question(t, "Who deploys?")
	var card string
	if jsonDecode(q.Extensions[aep.ExtClient], &card); card != "bob" {
		t.Errorf("the question names client %q; want bob", card)
	}
	wantError(t, "alice's crash", answerOf(t, alice.call(`1`, "crash", nil, nil, nil)).raw, `1`, "exited")
	if got := answerOf(t, alice.call(`2`, "echo", map[string]any{"message": "alice again"}, nil, nil)); got.text() != "alice again" {
		t.Errorf("alice after her server's crash: got %s", got.raw)
	}
	g.answer(t, q, aep.Answer{Values: map[string]any{"who": "bob-operator"}})
	p := outcome(t, "bob's request", waiting)
	if p.err != nil || !strings.Contains(p.answer, "bob-operator") || !strings.Contains(p.answer, `"id":1`) {
		t.Errorf("bob's request: got %q (%v); want the operator's answer under id 1", p.answer, p.err)
	}
	g.sharedSessions(t, 2)
}

// TestSharedRequestCancelledByItsStream: closing a stateless request's
// response stream cancels that request alone (MCP 2026-07-28): the
// server is told, its question is settled, and the shared server goes
// on serving.
func TestSharedRequestCancelledByItsStream(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	w := g.watch()
	c := &modern{t: t, g: g, name: "cancel-test"}
	ctx, cancel := context.WithCancel(context.Background())
	waiting := c.start(ctx, `"a"`, "mrtr-ask", nil)
	q := w.question(t, "Who deploys?")
	cancel()
	if p := outcome(t, "the cancelled request", waiting); p.err == nil && p.answer != "" {
		t.Errorf("the cancelled request got %q; want its stream closed without one", p.answer)
	}
	w.waitFor(t, "the cancelled request's question to be settled", func(w *watcher) bool { return w.resolved[q.ID] != "" })
	if got := answerOf(t, c.call(`"b"`, "echo", map[string]any{"message": "goes on"}, nil, nil)); got.text() != "goes on" {
		t.Errorf("echo after the cancellation: got %s", got.raw)
	}
	g.sharedSessions(t, 1)
}

// TestSharedInflightBound: past the requests a shared session serves at
// once, a stateless request gets 503 with Retry-After, and is served
// once one is answered.
func TestSharedInflightBound(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	g.srv.maxInflight = 1
	w := g.watch()
	c := &modern{t: t, g: g, name: "bound-test"}
	waiting := c.start(context.Background(), `1`, "mrtr-ask", nil)
	q := w.question(t, "Who deploys?")
	resp := c.call(`2`, "echo", map[string]any{"message": "x"}, nil, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a request past the bound: got %s (Retry-After %q); want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	g.answer(t, q, aep.Answer{Values: map[string]any{"who": "ops"}})
	if p := outcome(t, "the request in flight", waiting); !strings.Contains(p.answer, "ops") {
		t.Errorf("the request in flight: got %q (%v); want the operator's answer", p.answer, p.err)
	}
	if got := answerOf(t, c.call(`2`, "echo", map[string]any{"message": "now"}, nil, nil)); got.text() != "now" {
		t.Errorf("the request once the first was answered: got %s", got.raw)
	}
}

// TestSharedListenStreamHearsAnotherRequest: under serve -- COMMAND, a
// change one stateless request makes reaches the subscriptions/listen
// stream another request opened, as a stateless HTTP server delivers
// it (MCP 2026-07-28 basic/patterns/subscriptions), with go-sdk's server
// over stdio. Both requests use id 1: the listen stream's notifications
// carry the client's id as their subscriptionId. Another named client's
// listen stream, on its own server, hears nothing of it.
func TestSharedListenStreamHearsAnotherRequest(t *testing.T) {
	ids := newIdentities(t)
	otherCred := ids.add("other", time.Time{})
	g := startGateway(t, Options{Session: bridge2026(gosdkBin, elicit.RouteRemote), Identities: ids.path})
	c := &modern{t: t, g: g, name: "listener"}
	other := &modern{t: t, g: g, name: "other-app", token: otherCred}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	frames := c.listen(ctx, `1`)
	otherFrames := other.listen(ctx, `1`)
	for who, fr := range map[string]<-chan string{"the listener": frames, "the other client": otherFrames} {
		ack := nextFrame(t, who+"'s listen stream", fr)
		if !strings.Contains(ack, `"notifications/subscriptions/acknowledged"`) || !strings.Contains(ack, `"io.modelcontextprotocol/subscriptionId":1`) {
			t.Fatalf("%s's listen stream opened with %s; want the acknowledgement tagged with its own id 1", who, ack)
		}
	}
	if got := answerOf(t, c.call(`1`, "add-tool", map[string]any{"name": "fresh"}, nil, nil)); got.text() != "added fresh" {
		t.Fatalf("add-tool: got %s", got.raw)
	}
	changed := nextFrame(t, "the listen stream", frames)
	if !strings.Contains(changed, `"notifications/tools/list_changed"`) || !strings.Contains(changed, `"io.modelcontextprotocol/subscriptionId":1`) {
		t.Errorf("the listen stream got %s; want notifications/tools/list_changed tagged with its own id 1", changed)
	}
	select {
	case f := <-otherFrames:
		t.Errorf("another client's listen stream got %s from a change on the listener's server", f)
	default:
	}
	if n := g.srv.Sessions(); n != 2 {
		t.Errorf("live sessions: got %d; want 2, a shared one for each client", n)
	}
}

// listen opens a subscriptions/listen stream for tool list changes and
// returns its messages as they come; it stops with ctx.
func (c *modern) listen(ctx context.Context, id string) <-chan string {
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(ctx, "POST", c.g.mcpURL, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header = c.header("")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Del("Mcp-Name")
	out := make(chan string, 16)
	go func() {
		defer close(out)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- line
			}
		}
	}()
	return out
}

// nextFrame waits for the next message of a listen stream.
func nextFrame(t *testing.T, what string, frames <-chan string) string {
	t.Helper()
	select {
	case f, ok := <-frames:
		if !ok {
			t.Fatalf("%s ended", what)
		}
		return f
	case <-time.After(waitLimit):
		t.Fatalf("%s: nothing came", what)
	}
	return ""
}

// TestParamHeadersCheckedBeforeAnyToolsList: under serve -- COMMAND a
// stdio server sees no headers, so the gateway is the server that
// checks a stateless tools/call's Mcp-Param headers (MCP 2026-07-28
// streamable HTTP, Server Behavior for Custom Headers), even when no
// client listed the tools yet: it asks go-sdk's server for its tool
// list itself, once, and refuses a mismatched or missing header with
// 400 and -32020, while a matching one passes.
func TestParamHeadersCheckedBeforeAnyToolsList(t *testing.T) {
	g := startGateway(t, Options{Session: bridge2026(gosdkBin, elicit.RouteRemote)})
	c := &modern{t: t, g: g, name: "headers"}
	call := func(id, region string) *http.Response {
		h := c.header("region")
		if region != "" {
			h.Set("Mcp-Param-Region", region)
		}
		return g.request(t, "POST", "/mcp", h, c.body(id, "region", map[string]any{"region": "us-west1"}, nil, nil))
	}
	for _, tc := range []struct{ name, header string }{{"mismatched", "eu-west1"}, {"missing", ""}} {
		resp := call(`1`, tc.header)
		a := answerOf(t, resp)
		if resp.StatusCode != http.StatusBadRequest || a.Error == nil || a.Error.Code != -32020 || !strings.Contains(a.Error.Message, "Mcp-Param-Region") {
			t.Errorf("%s header: got %s %s; want 400 and -32020 naming Mcp-Param-Region", tc.name, resp.Status, a.raw)
		}
	}
	if a := answerOf(t, call(`2`, "us-west1")); a.text() != "us-west1" {
		t.Errorf("a matching header: got %s; want the tool's result", a.raw)
	}
}

// TestSharedRetryAtAnotherGatewayUnderRouteBoth: under --route both the
// client gets a requestState its shared session's proxy minted (one per
// round, so equal server states never meet), which carries the
// server's own: a retry that reaches another gateway of the fleet, whose
// proxy never held the round, still gives the server its own state, and
// the client gets its final result.
func TestSharedRetryAtAnotherGatewayUnderRouteBoth(t *testing.T) {
	one := startGateway(t, Options{Session: sessionOpts(elicit.RouteBoth), FleetSecret: aepToken})
	two := startGateway(t, Options{Session: sessionOpts(elicit.RouteBoth), FleetSecret: aepToken})
	at := func(g *gw) *modern { return &modern{t: t, g: g, name: "roamer", elicit: true} }
	state := inputRequired(t, "the round at the first gateway", answerOf(t, at(one).call(`1`, "mrtr-ask", nil, nil, nil)))
	who := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "roamer-answer"}}}
	if got := answerOf(t, at(two).call(`2`, "mrtr-ask", nil, &state, who)); !strings.Contains(got.text(), "roamer-answer") {
		t.Errorf("the retry at the other gateway: got %s; want the server's result with the client's answer", got.raw)
	}
}

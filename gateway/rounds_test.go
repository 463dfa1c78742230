package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// modern is a hand-driven MCP 2026-07-28 client: every request stands
// alone, carrying its version, its client's name and (with elicit) the
// elicitation capability in _meta, and no session.
type modern struct {
	t      *testing.T
	g      *gw
	name   string
	elicit bool
	token  string // "" means the test token; "-" none
}

// call POSTs tools/call of tool with args; state, when set, is echoed as
// requestState and responses as inputResponses.
func (c *modern) call(id, tool string, args map[string]any, state *string, responses map[string]any) *http.Response {
	c.t.Helper()
	return c.post(tool, c.body(id, tool, args, state, responses))
}

// body is the tools/call call sends.
func (c *modern) body(id, tool string, args map[string]any, state *string, responses map[string]any) string {
	caps := map[string]any{}
	if c.elicit {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	params := map[string]any{"name": tool, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": c.name, "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps}}
	if args != nil {
		params["arguments"] = args
	}
	if state != nil {
		params["requestState"] = *state
	}
	if responses != nil {
		params["inputResponses"] = responses
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call", "params": params})
	return string(body)
}

// post POSTs a raw 2026-07-28 tools/call body whose tool is name.
func (c *modern) post(name, body string) *http.Response {
	c.t.Helper()
	return c.g.request(c.t, "POST", "/mcp", c.header(name), body)
}

// header is the headers of a 2026-07-28 tools/call of the tool name.
func (c *modern) header(name string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		mcp.HeaderProtocolVersion: {"2026-07-28"}, mcp.HeaderMethod: {"tools/call"}, mcp.HeaderName: {name}}
	switch c.token {
	case "":
		h.Set("Authorization", "Bearer "+mcpToken)
	case "-":
	default:
		h.Set("Authorization", "Bearer "+c.token)
	}
	return h
}

// rpcAnswer is the response a 2026-07-28 request got.
type rpcAnswer struct {
	raw    string
	Result *struct {
		ResultType   string  `json:"resultType"`
		RequestState *string `json:"requestState"`
		Content      []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// text is a result's text, or the error's message.
func (a rpcAnswer) text() string {
	switch {
	case a.Result != nil && len(a.Result.Content) > 0:
		return a.Result.Content[0].Text
	case a.Error != nil:
		return fmt.Sprintf("error %d: %s", a.Error.Code, a.Error.Message)
	}
	return a.raw
}

// answerOf reads the one response of a request's HTTP response.
func answerOf(t *testing.T, resp *http.Response) rpcAnswer {
	t.Helper()
	msgs := readAll(t, resp)
	var a rpcAnswer
	for _, m := range msgs {
		if env, ok := parse([]byte(m)); ok && env.isResponse() {
			a.raw = m
			jsonUnmarshal(t, m, &a)
		}
	}
	if a.raw == "" {
		t.Fatalf("no response among %v (status %s)", msgs, resp.Status)
	}
	return a
}

// inputRequired returns the requestState of an input_required answer.
func inputRequired(t *testing.T, who string, a rpcAnswer) string {
	t.Helper()
	if a.Result == nil || a.Result.ResultType != "input_required" || a.Result.RequestState == nil {
		t.Fatalf("%s: got %s; want an input_required result with a requestState", who, a.raw)
	}
	return *a.Result.RequestState
}

// refusedState checks that a is the JSON-RPC error a requestState the
// gateway refuses gets, naming why.
func refusedState(t *testing.T, what string, a rpcAnswer, why string) {
	t.Helper()
	if a.Error == nil || a.Error.Code != mcp.INVALID_PARAMS || !strings.Contains(a.Error.Message, "requestState") || !strings.Contains(a.Error.Message, why) {
		t.Errorf("%s: got %s; want error %d about the requestState saying %q", what, a.raw, mcp.INVALID_PARAMS, why)
	}
}

func ptr(s string) *string { return &s }

// TestRequestStateIsNoKeyToAnotherClientsRound is the attack of issue 21
// item 1: a stateless client (Mallory) POSTs tools/call with the
// requestState the server hands every caller ("round-1"), while another
// client's (Alice's) round waits for its retry, its question answered by
// an operator. The gateway routes only on values it minted, so Mallory
// gets an error and not Alice's result; Alice's own retry gets her
// result, once: a replay, an altered value and her value on another
// request are refused.
func TestRequestStateIsNoKeyToAnotherClientsRound(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteBoth)})
	w := g.watch()
	alice := &modern{t: t, g: g, name: "alice", elicit: true}
	state := inputRequired(t, "alice", answerOf(t, alice.call(`"a1"`, "mrtr-ask", nil, nil, nil)))
	if state == "round-1" {
		t.Errorf("the client got the server's own requestState %q; want one the gateway minted", state)
	}
	g.answer(t, w.question(t, "Who deploys?"), aep.Answer{Values: map[string]any{"who": "alice-secret"}})

	// Mallory never saw Alice's traffic: she echoes the state the server
	// hands everyone, with answers of her own.
	mallory := &modern{t: t, g: g, name: "mallory", elicit: true}
	mine := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "mallory"}}}
	stolen := answerOf(t, mallory.call(`"m1"`, "mrtr-ask", nil, ptr("round-1"), mine))
	if strings.Contains(stolen.raw, "alice-secret") {
		t.Errorf("Mallory got Alice's result: %s", stolen.raw)
	}
	refusedState(t, "a requestState the gateway never handed out", stolen, "not one")
	forged := []byte(state)
	forged[len(forged)/2] ^= 1
	refusedState(t, "an altered requestState", answerOf(t, mallory.call(`"m2"`, "mrtr-ask", nil, ptr(string(forged)), mine)), "not one")
	refusedState(t, "Alice's requestState on another tool", answerOf(t, alice.call(`"a2"`, "echo", map[string]any{"message": "x"}, &state, nil)), "another request")

	// Her retry carries her own answer too: which of hers wins depends on
	// whether the operator's answer reached the round before the retry,
	// a race this test does not judge.
	hers := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "alice-client"}}}
	got := answerOf(t, alice.call(`"a3"`, "mrtr-ask", nil, &state, hers))
	if !strings.Contains(got.text(), `"who":"alice-`) {
		t.Errorf("Alice's retry: got %s; want her operator's answer or her own", got.raw)
	}
	refusedState(t, "Alice's requestState a second time", answerOf(t, alice.call(`"a4"`, "mrtr-ask", nil, &state, hers)), "already used")
	g.sharedSessions(t, 1)
}

// TestHonestRoundsNeverCollide: go-sdk's test server hands every caller
// the requestState "ask-1". Two clients each get an input_required, an
// operator answers each one's question, and each client's honest retry,
// carrying its own answer too, gets its own result (its operator's or
// its own answer, whichever reached the round first), never the other's.
func TestHonestRoundsNeverCollide(t *testing.T) {
	g := startGateway(t, Options{Session: bridge2026(gosdkBin, elicit.RouteBoth)})
	w := g.watch()
	alpha := &modern{t: t, g: g, name: "alpha", elicit: true}
	bravo := &modern{t: t, g: g, name: "bravo", elicit: true}
	sa := inputRequired(t, "alpha", answerOf(t, alpha.call(`1`, "ask", map[string]any{"message": "Alpha deploys?"}, nil, nil)))
	sb := inputRequired(t, "bravo", answerOf(t, bravo.call(`1`, "ask", map[string]any{"message": "Bravo deploys?"}, nil, nil)))
	if sa == sb {
		t.Errorf("both clients got the requestState %q", sa)
	}
	g.answer(t, w.question(t, "Alpha deploys?"), aep.Answer{Values: map[string]any{"name": "alpha-operator", "n": 1}})
	g.answer(t, w.question(t, "Bravo deploys?"), aep.Answer{Values: map[string]any{"name": "bravo-operator", "n": 2}})
	client := func(name string) map[string]any {
		return map[string]any{"answer": map[string]any{"action": "accept", "content": map[string]any{"name": name, "n": 3}}}
	}
	fa := answerOf(t, alpha.call(`2`, "ask", map[string]any{"message": "Alpha deploys?"}, &sa, client("alpha-client")))
	fb := answerOf(t, bravo.call(`2`, "ask", map[string]any{"message": "Bravo deploys?"}, &sb, client("bravo-client")))
	if !strings.Contains(fa.text(), `"name":"alpha-`) {
		t.Errorf("alpha's retry got %s; want alpha's operator's answer or its own", fa.text())
	}
	if !strings.Contains(fb.text(), `"name":"bravo-`) {
		t.Errorf("bravo's retry got %s; want bravo's operator's answer or its own", fb.text())
	}
	g.sharedSessions(t, 1) // both clients hold the token: one server served both rounds
}

// bridge2026 is the options of sessions whose upstream is bin, over
// stdio, with route.
func bridge2026(bin string, route elicit.Route) bridge.Options {
	o := bridgeCommand([]string{bin})
	o.Route = route
	return o
}

// TestRetryReachesAnotherGatewayOfTheFleet: a round of a server that
// asks twice (its second requestState carries the first answer) runs
// across two gateways of a fleet, which share the secret: the retry that
// reaches the other gateway is unwrapped there, and the server, asked by
// the first gateway again for the last round, gets its own state back. A
// gateway of another fleet refuses the wrapper, and the gateway that
// sees a wrapper used refuses it the second time.
func TestRetryReachesAnotherGatewayOfTheFleet(t *testing.T) {
	one := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient), FleetSecret: aepToken})
	two := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient), FleetSecret: aepToken})
	foreign := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient), FleetSecret: "another fleet's token"})
	at := func(g *gw) *modern { return &modern{t: t, g: g, name: "roamer", elicit: true} }
	args := map[string]any{"rounds": 2}
	who := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "roamer-answer"}}}
	sure := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}

	s1 := inputRequired(t, "the first round", answerOf(t, at(one).call(`1`, "mrtr-ask", args, nil, nil)))
	refusedState(t, "a retry at a gateway of another fleet", answerOf(t, at(foreign).call(`2`, "mrtr-ask", args, &s1, who)), "not one")
	s2 := inputRequired(t, "the second round, at the other gateway", answerOf(t, at(two).call(`3`, "mrtr-ask", args, &s1, who)))
	final := answerOf(t, at(one).call(`4`, "mrtr-ask", args, &s2, sure))
	var got struct {
		State   string `json:"state"`
		Confirm struct {
			Content map[string]any `json:"content"`
		} `json:"confirm"`
	}
	jsonUnmarshal(t, final.text(), &got)
	if want := `round-2:{"action":"accept","content":{"who":"roamer-answer"}}`; got.State != want || got.Confirm.Content["ok"] != true {
		t.Errorf("the last round: the server got requestState %q and %v; want %q and the confirmation", got.State, got.Confirm.Content, want)
	}
	refusedState(t, "the second round's requestState again", answerOf(t, at(one).call(`5`, "mrtr-ask", args, &s2, sure)), "already used")
}

// TestRequestStateIsRefusedWhole: a retry whose requestState the gateway
// cannot tell from a second one (in another case, or twice), or that is
// no string, is refused, naming the member; the honest retry then passes.
func TestRequestStateIsRefusedWhole(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient)})
	c := &modern{t: t, g: g, name: "spelling", elicit: true}
	state := inputRequired(t, "the first round", answerOf(t, c.call(`1`, "mrtr-ask", nil, nil, nil)))
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct{ name, params string }{
		{"another case", `{"name":"mrtr-ask",` + meta + `,"RequestState":"round-1"}`},
		{"beside another case", `{"name":"mrtr-ask",` + meta + `,"requestState":` + strconvQuote(state) + `,"REQUESTSTATE":"round-1"}`},
		{"twice", `{"name":"mrtr-ask",` + meta + `,"requestState":` + strconvQuote(state) + `,"requestState":"round-1"}`},
		{"a number", `{"name":"mrtr-ask",` + meta + `,"requestState":1}`},
	} {
		a := answerOf(t, c.post("mrtr-ask", `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":`+tc.params+`}`))
		if a.Error == nil || a.Error.Code != mcp.INVALID_PARAMS || !strings.Contains(a.Error.Message, "requestState") {
			t.Errorf("%s: got %s; want an Invalid params error about requestState", tc.name, a.raw)
		}
	}
	got := answerOf(t, c.call(`2`, "mrtr-ask", nil, &state, map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "x"}}}))
	if !strings.Contains(got.text(), `"who":"x"`) {
		t.Errorf("the honest retry after the refused ones: got %s", got.raw)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
)

// probeJS defines probe(P): what a page holding the token tries against the
// endpoint at P.base: subscribe on the WebSocket (and answer question P.qid
// when P.answer), read the SSE stream, and POST an event. window.result
// says how each went.
const probeJS = `function probe(P) {
  const r = window.result = {ws: "pending", frames: [], sse: "pending", sseEvents: 0, post: "pending"};
  const ws = new WebSocket("ws://" + P.base + "/socket?access_token=" + P.token);
  ws.onopen = () => {
    r.ws = "open";
    ws.send(JSON.stringify({type: "hello", versions: ["0.1"], role: "consumer", identity: {agent: "page"}}));
    ws.send(JSON.stringify({type: "subscribe", id: "all", from: "all"}));
    if (P.answer) ws.send(JSON.stringify({aep: "0.1", id: P.cmd, type: "control.attention.respond", subject: P.qid,
      time: new Date().toISOString(), source: "aep://page/agent/page", agent: "page", session: P.session,
      data: {answer: {option: "decline"}}}));
  };
  ws.onmessage = (m) => r.frames.push(m.data);
  ws.onclose = () => { if (r.ws === "pending") r.ws = "refused"; };
  const es = new EventSource("http://" + P.base + "/stream?from=all&access_token=" + P.token);
  es.onopen = () => { r.sse = "open"; };
  es.addEventListener("attention.requested", () => { r.sseEvents++; });
  es.onerror = () => { if (r.sse === "pending") r.sse = "refused"; es.close(); };
  fetch("http://" + P.base + "/events", {method: "POST", headers: {"Authorization": "Bearer " + P.token,
    "AEP-Version": "0.1", "Content-Type": "application/json"},
    body: JSON.stringify({aep: "0.1", id: P.cmd + "E", type: "session.started", time: new Date().toISOString(),
      source: "aep://page/agent/page/session/page", agent: "page", session: "page-" + P.cmd, seq: 0})})
    .then((resp) => { r.post = "status " + resp.status; }, () => { r.post = "refused"; });
}`

// probeResult is window.result.
type probeResult struct {
	WS        string   `json:"ws"`
	Frames    []string `json:"frames"`
	SSE       string   `json:"sse"`
	SSEEvents int      `json:"sseEvents"`
	Post      string   `json:"post"`
}

// probePage serves a page, on a port of its own, that defines probe.
func probePage(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>probe</title><script>%s</script>", probeJS)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runProbe runs probe(params) in the current page (defining it first when
// define is set), waits until every attempt settled, and returns how.
func runProbe(t *testing.T, ctx context.Context, params map[string]any, define bool) probeResult {
	t.Helper()
	js := fmt.Sprintf("probe(%s); 0", mustJSON(params))
	if define {
		js = probeJS + ";" + js
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](js)); err != nil {
		t.Fatal(err)
	}
	wait := `window.result && window.result.ws !== "pending" && window.result.sse !== "pending" && window.result.post !== "pending"`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](wait)); err != nil {
		t.Fatal(err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.result)`))
	if err != nil {
		t.Fatal(err)
	}
	var r probeResult
	json.Unmarshal([]byte(out), &r)
	return r
}

// TestForeignPagesCannotUseTheEndpoint runs real Chromium against the
// endpoint. A page from another port holding the token cannot subscribe,
// read the stream, post or answer; nor can a page on a rebinding name that
// resolves to the endpoint. A page from an --allow-origin can, which shows
// the probe itself works: its answer is the one the server receives.
func TestForeignPagesCannotUseTheEndpoint(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	s := startSession(t, sessionConfig{})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	params := func(base, cmd string) map[string]any {
		return map[string]any{"base": base, "token": "origin-token", "qid": req.ID, "session": req.Session, "cmd": cmd, "answer": true}
	}
	evil, friendly := probePage(t), probePage(t)
	ep, err := endpoint.New(endpoint.Options{Token: "origin-token", Hub: s.b.Hub(), Root: inbox.Handler(), AllowOrigins: []string{friendly.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ep.AddClaim(s.b.Claim("test"))
	srv := httptest.NewServer(ep.Handler())
	t.Cleanup(func() { ep.Close(); srv.Close() })
	base := strings.TrimPrefix(srv.URL, "http://")
	port := base[strings.LastIndex(base, ":")+1:]

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("host-resolver-rules", "MAP rebind.example 127.0.0.1"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 2*waitLimit)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })

	refused := func(name string, r probeResult) {
		t.Helper()
		// A cross-origin POST fails its preflight; a same-origin one (the
		// rebinding page) reads its 403.
		if r.WS != "refused" || len(r.Frames) != 0 || r.SSE != "refused" || r.SSEEvents != 0 || (r.Post != "refused" && r.Post != "status 403") {
			t.Errorf("%s: %+v; want every attempt refused and nothing received", name, r)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	refused("a page from another port", runProbe(t, ctx, params(base, "01EVIL"), false))

	// DNS rebinding: the endpoint reached under a name that resolves to it.
	rebound := "rebind.example:" + port
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+rebound+"/#token=origin-token")); err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "forbidden-host") {
		t.Errorf("the inbox under a rebinding name showed %q; want forbidden-host", page)
	}
	refused("a page on a rebinding name", runProbe(t, ctx, params(rebound, "01REBIND"), true))

	if err := chromedp.Do(ctx, chromedp.Navigate(friendly.URL)); err != nil {
		t.Fatal(err)
	}
	r := runProbe(t, ctx, params(base, "01FRIENDLY"), false)
	if r.WS != "open" || r.SSE != "open" || r.Post != "status 202" {
		t.Errorf("a page from an allowed origin: %+v; want the socket and stream open, the POST accepted", r)
	}
	ack := s.next("control.accepted")
	if ack.Cause != "01FRIENDLY" {
		t.Errorf("the first accepted command is %q; want the allowed page's 01FRIENDLY", ack.Cause)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" {
		t.Fatalf("server got %v; want the allowed page's decline", got)
	}
}

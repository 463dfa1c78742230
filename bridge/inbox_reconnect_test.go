package bridge

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// awayHook lets a test take the inbox page away from its bridge: leave
// closes its socket, and every socket it opens until back fails at once,
// as a laptop that went to sleep.
const awayHook = `(() => {
  const Real = window.WebSocket;
  const st = { away: false, live: [] };
  class Hooked extends Real {
    constructor(url, protocols) { super(st.away ? String(url).replace("/socket", "/no-socket") : url, protocols); st.live.push(this); }
  }
  window.WebSocket = Hooked;
  Object.defineProperty(window, "__away", { value: {
    leave() { st.away = true; st.live.forEach((w) => w.close()); st.live = []; },
    back() { st.away = false; },
  } });
})()`

// TestInboxReconcilesOnReconnect: a question settled while the page was
// away, whose end the bridge's replay no longer holds, leaves the open
// set when the page reconnects, because the bridge's snapshot of open
// questions lacks it; a question still open stays.
func TestInboxReconcilesOnReconnect(t *testing.T) {
	ctx := newBrowser(t)
	// A replay of four events per session: the end of a question is soon
	// out of it.
	s := startSession(t, sessionConfig{opts: Options{hub: bus.NewHubWith(bus.HubOptions{ReplayPerSession: 4})}})
	base := s.serve("inbox-token")
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: awayHook}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(base+"/#token=inbox-token"))
	first := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	q1 := s.next("attention.requested")
	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	q2 := s.next("attention.requested")
	card := func(id string) string { return `#pending article[data-qid="` + id + `"]` }
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(card(q1.ID))), chromedp.WaitVisible(chromedp.CSS(card(q2.ID))))

	eval[bool](t, ctx, `(window.__away.leave(), true)`)
	poll(t, ctx, "the page to notice", `document.getElementById("status").textContent === "reconnecting…"`)
	if res, _ := s.respond(q1.ID, aep.Answer{Option: "cancel"}); !res.Accepted() {
		t.Fatalf("cancelling the first question: %s", res.Raw)
	}
	s.result(first)
	// More of the session's history than the replay keeps.
	for range 2 {
		c := s.call("ask", map[string]any{"schema": "pinned"}, nil)
		q := s.next("attention.requested")
		s.respond(q.ID, aep.Answer{Option: "decline"})
		s.result(c)
	}
	eval[bool](t, ctx, `(window.__away.back(), true)`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#history article[data-qid="`+q1.ID+`"]`)))
	if got := text(t, ctx, `#history article[data-qid="`+q1.ID+`"] .outcome`); !strings.HasPrefix(got, "Settled while this page was away") {
		t.Errorf("the first question's history says %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll(`+jsString(card(q1.ID))+`).length`); n != 0 {
		t.Error("the question settled while the page was away is still shown open")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll(`+jsString(card(q2.ID))+`).length`); n != 1 {
		t.Error("the question still open left the page")
	}
	if got := text(t, ctx, "#count"); got != "1 open question" {
		t.Errorf("the count says %q", got)
	}
}

// TestInboxQuestionLinkInANewTab: a notification's link (#question=ID,
// never a token) opened in a new tab takes the token from the inbox tab
// already open in the browser, connects and shows the question; in a
// browser with no inbox open it asks for the token in a password field.
// No address the tabs show ever holds the token.
func TestInboxQuestionLinkInANewTab(t *testing.T) {
	ctx := newBrowser(t)
	s := startSession(t, sessionConfig{})
	base := s.serve("inbox-token")
	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	q := s.next("attention.requested")
	card := `#pending article[data-qid="` + q.ID + `"]`
	link := base + "/#question=" + q.ID

	// A browser with no inbox open: the link asks for the token.
	do(t, ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#signin input[type=password]")))
	setValues(t, ctx, map[string]string{"#signin-token": "inbox-token"})
	do(t, ctx, chromedp.Click(chromedp.CSS("#signin button[type=submit]")), chromedp.WaitVisible(chromedp.CSS(card)))
	if n := eval[int](t, ctx, `document.querySelectorAll("#signin").length`); n != 0 {
		t.Error("the sign-in form stayed after the token was given")
	}

	// That tab now holds the token: a second tab of the same browser opened
	// on the link asks it, and shows the question with no form.
	tab2, cancel := chromedp.NewContext(ctx)
	defer cancel()
	do(t, tab2, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(card)))
	poll(t, tab2, "connected", `document.getElementById("status").textContent === "connected"`)
	if n := eval[int](t, tab2, `document.querySelectorAll("#signin").length`); n != 0 {
		t.Error("the second tab asked for the token an open tab holds")
	}
	if href := eval[string](t, tab2, `location.href`); strings.Contains(href, "inbox-token") {
		t.Errorf("the second tab's address holds the token: %s", href)
	}
	if href := eval[string](t, ctx, `location.href`); strings.Contains(href, "inbox-token") {
		t.Errorf("the first tab's address holds the token: %s", href)
	}
}

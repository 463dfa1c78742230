package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// The tests in this file check the inbox's system notifications and its
// tab title in headless Chromium, with a real bridge behind it.
//
//   - The inbox tab is put in the background as an operator does it: a
//     second tab opens in front of it in the same window. That is what makes
//     a page's document.visibilityState "hidden" in Chromium; focus
//     emulation leaves a page visible, and a frozen page runs no script.
//   - The notifications permission is granted for the bridge's origin with
//     Browser.setPermission, as an operator grants it in the browser's
//     prompt; without it, the page starts as a browser leaves it.
//   - notifyWatch, run before the page's own scripts, records each
//     construction of window.Notification, each permission request and each
//     window.focus() call. It only observes: the page decides when to
//     notify, and what.

// notifyWatch wraps window.Notification and records what the page does
// with it, and gives the tests promises to wait on: a number of
// notifications, a tab title, a visibility state.
const notifyWatch = `(() => {
  const Real = window.Notification;
  if (typeof Real !== "function") return;
  const rec = { notes: [], asked: 0, focused: 0, waiters: [] };
  const wake = () => { rec.waiters = rec.waiters.filter((w) => !w.ready() || (w.resolve(), false)); };
  class Watched extends Real {
    constructor(title, options) {
      super(title, options);
      const o = options || {};
      this.__rec = { title: String(title), body: o.body === undefined ? "" : String(o.body), tag: String(o.tag || ""),
        hidden: document.visibilityState === "hidden", closed: false };
      rec.notes.push(this);
      wake();
    }
    close() { this.__rec.closed = true; super.close(); }
  }
  const ask = Real.requestPermission.bind(Real);
  Watched.requestPermission = (...args) => { rec.asked++; return ask(...args); };
  window.Notification = Watched;
  const focus = window.focus.bind(window);
  window.focus = () => { rec.focused++; focus(); };
  const until = (ready, value) => new Promise((resolve) => { rec.waiters.push({ ready, resolve: () => resolve(value()) }); wake(); });
  rec.list = () => rec.notes.map((n) => n.__rec);
  rec.count = (n) => until(() => rec.notes.length >= n, rec.list);
  rec.title = (want) => until(() => document.title === want, () => document.title);
  document.addEventListener("DOMContentLoaded", () => {
    new MutationObserver(wake).observe(document.head, { subtree: true, childList: true, characterData: true });
  });
  Object.defineProperty(window, "__watch", { value: rec });
})()`

// note is one notification the page made, as notifyWatch recorded it.
type note struct {
	Title  string `json:"title"`
	Body   string `json:"body"`
	Tag    string `json:"tag"`
	Hidden bool   `json:"hidden"`
	Closed bool   `json:"closed"`
}

// inboxTab is an inbox page under notifyWatch, and the tab that hides it.
type inboxTab struct {
	t     *testing.T
	s     *session
	base  string // the endpoint's base URL
	url   string // the inbox link with its token
	ctx   context.Context
	front context.Context // a second tab in the same window, once opened
}

// watchedInbox starts a bridge and a browser on screen v, grants the
// notifications permission to the bridge's origin when grant is set, and
// installs notifyWatch for every page of the tab. The page is not
// loaded yet: see open.
func watchedInbox(t *testing.T, v viewport, cfg sessionConfig, grant bool) *inboxTab {
	t.Helper()
	ctx := newBrowser(t)
	s := startSession(t, cfg)
	base := s.serve("inbox-token")
	in := &inboxTab{t: t, s: s, base: base, url: base + "/#token=inbox-token", ctx: ctx}
	if grant {
		in.grant()
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: notifyWatch}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.EmulateViewport(v.w, v.h))
	return in
}

// grant grants the notifications permission to the bridge's origin, as
// an operator does in the browser's prompt.
func (in *inboxTab) grant() {
	in.t.Helper()
	if _, err := chromedp.CallBrowser(in.ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: in.base}); err != nil {
		in.t.Fatal(err)
	}
}

// open loads the inbox in its tab and waits until it has connected and
// counted the questions open on the bridge (want, as the tab title shows
// it). It waits on promises, which a background tab settles as well.
func (in *inboxTab) open(want string) {
	in.t.Helper()
	do(in.t, in.ctx, chromedp.Navigate(in.url))
	in.title(want)
	if got := wait[string](in.t, in.ctx, `new Promise((resolve) => { const s = document.getElementById("status");
	  if (s.classList.contains("up")) return resolve(s.textContent);
	  new MutationObserver(() => { if (s.classList.contains("up")) resolve(s.textContent); }).observe(s, { attributes: true }); })`); got != "connected" {
		in.t.Fatalf("the inbox says %q", got)
	}
}

// hide brings a second tab to the front of the window, which hides the
// inbox tab, and waits until the inbox page says it is hidden.
func (in *inboxTab) hide() {
	in.t.Helper()
	if in.front == nil {
		front, cancel := chromedp.NewContext(in.ctx, chromedp.WithNewWindow(false))
		in.t.Cleanup(cancel)
		in.front = front
		do(in.t, front, chromedp.Navigate("about:blank"))
	} else if _, err := chromedp.Call(in.front, page.BringToFront, cdp.Empty{}); err != nil {
		in.t.Fatal(err)
	}
	in.visibility("hidden")
}

// show brings the inbox tab back to the front.
func (in *inboxTab) show() {
	in.t.Helper()
	if _, err := chromedp.Call(in.ctx, page.BringToFront, cdp.Empty{}); err != nil {
		in.t.Fatal(err)
	}
	in.visibility("visible")
}

// visibility waits until the inbox tab's page is in the visibility state
// want; the page may be the blank one a new tab starts with.
func (in *inboxTab) visibility(want string) {
	in.t.Helper()
	if got := wait[string](in.t, in.ctx, `new Promise((resolve) => { const ok = () => document.visibilityState === `+jsString(want)+`;
	  if (ok()) return resolve(document.visibilityState);
	  document.addEventListener("visibilitychange", () => { if (ok()) resolve(document.visibilityState); }); })`); got != want {
		in.t.Fatalf("the inbox tab is %s; want %s", got, want)
	}
}

// title waits until the inbox tab's title is want.
func (in *inboxTab) title(want string) {
	in.t.Helper()
	if got := wait[string](in.t, in.ctx, `__watch.title(`+jsString(want)+`)`); got != want {
		in.t.Fatalf("the tab title is %q; want %q", got, want)
	}
}

// settled waits until the page's header shows what the tab title says:
// connected, and the count of open questions rendered. The title changes
// at once, the header with the next render; on a narrow screen the
// header wraps by its texts, so the Notify me box moves until it has
// rendered, and a click before that can land beside it.
func (in *inboxTab) settled() {
	in.t.Helper()
	const ready = `(() => { const m = /^\(([\d,]+)\) /.exec(document.title), n = m ? m[1] : "0";
	  return document.getElementById("status").classList.contains("up") &&
	    document.getElementById("count").textContent === (n === "1" ? "1 open question" : n + " open questions"); })()`
	if _, err := chromedp.Run(in.ctx, chromedp.Poll[bool](ready, chromedp.WithPollingTimeout(waitLimit))); err != nil {
		in.t.Fatalf("the inbox header never showed the count of its title %q: %v", eval[string](in.t, in.ctx, `document.title`), err)
	}
}

// toggle clicks the Notify me box, once the header has settled, and
// waits until the box is checked as want: the operator's click has
// been taken.
func (in *inboxTab) toggle(want bool) {
	in.t.Helper()
	in.settled()
	do(in.t, in.ctx, chromedp.Click(chromedp.CSS("#notify")))
	if _, err := chromedp.Run(in.ctx, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById("notify").checked === %v`, want), chromedp.WithPollingTimeout(waitLimit))); err != nil {
		in.t.Fatalf("clicked, the Notify me box never became checked=%v: %v", want, err)
	}
}

// notes waits until the page has made n notifications, and returns all it
// made.
func (in *inboxTab) notes(n int) []note {
	in.t.Helper()
	return wait[[]note](in.t, in.ctx, fmt.Sprintf(`__watch.count(%d)`, n))
}

// ask asks a question through the bridge and returns its event.
func (in *inboxTab) ask(message string) aep.Event {
	in.t.Helper()
	in.s.call("ask", map[string]any{"schema": "pinned", "message": message}, nil)
	return in.s.next("attention.requested")
}

// wait evaluates a promise in the page and decodes what it resolves to,
// failing the test if it has not settled within waitLimit: a failure
// guard, not a synchronisation.
func wait[T any](t *testing.T, ctx context.Context, promise string) T {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	v, err := chromedp.Run(wctx, chromedp.Evaluate[T](promise, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("waiting on %s: %v", promise, err)
	}
	return v
}

// asker is an emitter outside the bridge (a hook, another tool) that
// posts its questions to the endpoint, as bus.Emitter stamps them.
type asker struct {
	t    *testing.T
	base string
	em   *bus.Emitter
	out  *ndjson
}

func newAsker(t *testing.T, base, session string) *asker {
	t.Helper()
	out := &ndjson{}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "hook", Session: session, Sinks: []bus.Sink{out}})
	if err != nil {
		t.Fatal(err)
	}
	return &asker{t: t, base: base, em: em, out: out}
}

// post emits d and ingests it; it returns the event.
func (a *asker) post(d aep.Draft) aep.Event {
	a.t.Helper()
	ev, _, err := a.em.Emit(d)
	if err != nil {
		a.t.Fatal(err)
	}
	ingest(a.t, a.base, "inbox-token", a.out.lines)
	a.out.lines = nil
	return ev
}

// permission asks for a permission, with options, at the redacted level.
func (a *asker) permission(server, prompt string) aep.Event {
	a.t.Helper()
	return a.post(aep.Draft{Type: "attention.requested", Subject: server, Capture: aep.CaptureRedacted,
		Data: aep.AttentionRequested{Kind: "permission", Prompt: prompt, RespondVia: []string{"control"},
			Options: []aep.Choice{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}}}})
}

// TestInboxNotifiesFromAHiddenTab: while the inbox tab is in the
// background, each new question (and permission request) raises a system
// notification, with the server and the first line of the prompt, and the
// tab title counts the open questions as they open and settle. A click on
// a notification brings the operator to that question; a question settled
// elsewhere takes its notification away.
func TestInboxNotifiesFromAHiddenTab(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		in := watchedInbox(t, v, sessionConfig{}, true)
		in.open("aep-mcp-bridge inbox")
		in.hide()

		q1 := in.ask("Deploy checkout to production?\nThree replicas, canary first.")
		in.title("(1) aep-mcp-bridge inbox")
		hook := newAsker(t, in.base, "hook-session")
		perm := hook.permission("shell-server", "Allow `rm -rf build/` in /srv/checkout?\nThe agent wants to clean the build.")
		in.title("(2) aep-mcp-bridge inbox")
		got := in.notes(2)
		want := []note{
			{Title: "Question from " + q1.Subject, Body: "Deploy checkout to production?", Tag: "aep-mcp-bridge-inbox:" + q1.ID, Hidden: true},
			{Title: "Permission request from shell-server", Body: "Allow `rm -rf build/` in /srv/checkout?", Tag: "aep-mcp-bridge-inbox:" + perm.ID, Hidden: true},
		}
		if q1.Subject != "elicit-test-server" {
			t.Fatalf("the bridge says the question comes from %q", q1.Subject)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("the notifications (-want +got):\n%s", diff)
		}

		// Answered elsewhere (here, by a command on the bus), the question
		// leaves the count, and its notification goes away.
		if res, _ := in.s.respond(q1.ID, aep.Answer{Option: "decline"}); !res.Accepted() {
			t.Fatalf("the bridge refused the answer: %+v", res)
		}
		in.title("(1) aep-mcp-bridge inbox")
		if closed := eval[[]bool](t, in.ctx, `__watch.list().map((n) => n.closed)`); !cmp.Equal(closed, []bool{true, false}) {
			t.Errorf("closed notifications: %v; want the answered question's only", closed)
		}

		// A click on the permission request's notification focuses the
		// tab and the request's first control.
		focused := eval[map[string]any](t, in.ctx, `(() => { __watch.notes[1].dispatchEvent(new Event("click"));
		  const card = document.activeElement && document.activeElement.closest("article");
		  return { qid: card ? card.dataset.qid : "", control: document.activeElement.textContent, focus: __watch.focused }; })()`)
		if diff := cmp.Diff(map[string]any{"qid": perm.ID, "control": "Allow", "focus": float64(1)}, focused); diff != "" {
			t.Errorf("after a click on the notification (-want +got):\n%s", diff)
		}
		in.show()
		if !eval[bool](t, in.ctx, `document.getElementById("notify").checked`) {
			t.Error("with the permission granted, the Notify me box is not checked")
		}

		// Settled, the permission request leaves the title empty of a count.
		hook.post(aep.Draft{Type: "attention.resolved", Subject: perm.ID, Capture: aep.CaptureMetadata,
			Data: aep.AttentionResolved{Resolution: aep.ResolutionDismissed}})
		in.title("aep-mcp-bridge inbox")
		if n := len(eval[[]note](t, in.ctx, `__watch.list()`)); n != 2 {
			t.Errorf("%d notifications in all; want 2", n)
		}
	})
}

// TestInboxNotifiesOnlyWhatIsNew: the questions already open when the
// page connects are no news, even to a page loaded in the background, and
// a question that arrives while the tab is in front raises nothing. A
// click on a question's notification, or a link naming it, turns to the
// page of cards that holds it.
func TestInboxNotifiesOnlyWhatIsNew(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		in := watchedInbox(t, v, sessionConfig{}, true)
		hook := newAsker(t, in.base, "hook-session")
		for i := range 21 { // more than a page of cards
			hook.permission("shell-server", fmt.Sprintf("Allow step %d?", i+1))
		}
		in.hide() // before the page loads: it starts in the background
		in.open("(21) aep-mcp-bridge inbox")

		q22 := in.ask("Scale billing to four replicas?")
		in.title("(22) aep-mcp-bridge inbox")
		got := in.notes(1)
		want := []note{{Title: "Question from elicit-test-server", Body: "Scale billing to four replicas?", Tag: "aep-mcp-bridge-inbox:" + q22.ID, Hidden: true}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("the notifications (-want +got):\n%s", diff)
		}

		// Back in front, the tab shows the question itself: its
		// notification goes away, and the next question raises none.
		in.show()
		in.ask("Rotate the billing key?")
		in.title("(23) aep-mcp-bridge inbox")
		in.hide()
		q24 := in.ask("Drain node eu-7?")
		in.title("(24) aep-mcp-bridge inbox")
		got = in.notes(2)
		want[0].Closed = true
		want = append(want, note{Title: "Question from elicit-test-server", Body: "Drain node eu-7?", Tag: "aep-mcp-bridge-inbox:" + q24.ID, Hidden: true})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("the notifications, after one question asked while the tab was in front (-want +got):\n%s", diff)
		}

		// The 24th open question is on the second page of cards.
		revealed := func() map[string]any {
			return eval[map[string]any](t, in.ctx, `(() => { const card = document.activeElement && document.activeElement.closest("article");
			  return { qid: card ? card.dataset.qid : "", page: document.getElementById("page-info").textContent }; })()`)
		}
		eval[bool](t, in.ctx, `__watch.notes[1].dispatchEvent(new Event("click"))`)
		if diff := cmp.Diff(map[string]any{"qid": q24.ID, "page": "Questions 21–24 of 24"}, revealed()); diff != "" {
			t.Errorf("after a click on the notification (-want +got):\n%s", diff)
		}

		// A webhook notification's link names a question: the tab that
		// holds the token opens at it.
		in.show()
		do(t, in.ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(in.base+"/#question="+q22.ID))
		in.title("(24) aep-mcp-bridge inbox")
		if _, err := chromedp.Run(in.ctx, chromedp.Poll[bool](`document.activeElement.closest("article") !== null`, chromedp.WithPollingTimeout(waitLimit))); err != nil {
			t.Fatalf("the linked question never took the focus: %v", err)
		}
		if diff := cmp.Diff(map[string]any{"qid": q22.ID, "page": "Questions 21–24 of 24"}, revealed()); diff != "" {
			t.Errorf("opened at the link of a question (-want +got):\n%s", diff)
		}
		if href := eval[string](t, in.ctx, `location.href`); href != in.base+"/" {
			t.Errorf("the address bar keeps %s", href)
		}
	})
}

// TestInboxAsksToNotifyOnlyWhenTold: the page never asks for the
// permission by itself; the Notify me box asks once, on the operator's
// click, and the answer is kept: a browser that refused leaves the box
// saying so, and the page does not ask again, reloaded or clicked. With
// the permission granted, the operator's "off" is kept across a reload.
// The control fits the screen.
func TestInboxAsksToNotifyOnlyWhenTold(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		in := watchedInbox(t, v, sessionConfig{}, false)
		in.open("aep-mcp-bridge inbox")
		in.hide()
		in.ask("Deploy checkout?")
		in.title("(1) aep-mcp-bridge inbox")
		in.show()
		state := func() map[string]any {
			return eval[map[string]any](t, in.ctx, `(() => { const box = document.getElementById("notify"), ctl = document.getElementById("notify-ctl");
			  const r = ctl.getBoundingClientRect();
			  return { asked: __watch.asked, checked: box.checked, disabled: box.disabled, says: ctl.textContent.trim(),
			    fits: r.width > 0 && r.right <= window.innerWidth && document.documentElement.scrollWidth <= window.innerWidth }; })()`)
		}
		if diff := cmp.Diff(map[string]any{"asked": float64(0), "checked": false, "disabled": false, "says": "Notify me", "fits": true}, state()); diff != "" {
			t.Errorf("before the operator clicks (-want +got):\n%s", diff)
		}
		// Headless Chromium refuses every permission prompt, as an operator
		// who clicks Block does.
		in.settled()
		do(t, in.ctx, chromedp.Click(chromedp.CSS("#notify")))
		if _, err := chromedp.Run(in.ctx, chromedp.Poll[bool](`document.getElementById("notify").disabled`, chromedp.WithPollingTimeout(waitLimit))); err != nil {
			t.Fatalf("the box never showed the refusal: %v", err)
		}
		blocked := map[string]any{"asked": float64(1), "checked": false, "disabled": true, "says": "Notifications blocked", "fits": true}
		if diff := cmp.Diff(blocked, state()); diff != "" {
			t.Errorf("after the browser refused (-want +got):\n%s", diff)
		}
		in.settled()
		do(t, in.ctx, chromedp.Click(chromedp.CSS("#notify-ctl")))
		if diff := cmp.Diff(blocked, state()); diff != "" {
			t.Errorf("clicked again (-want +got):\n%s", diff)
		}
		do(t, in.ctx, chromedp.Reload())
		in.title("(1) aep-mcp-bridge inbox")
		blocked["asked"] = float64(0)
		if diff := cmp.Diff(blocked, state()); diff != "" {
			t.Errorf("reloaded (-want +got):\n%s", diff)
		}

		// Granted, and turned off by the operator: off it stays.
		in.grant()
		do(t, in.ctx, chromedp.Reload())
		in.title("(1) aep-mcp-bridge inbox")
		// The page reads the permission asynchronously: the box is on
		// once it has, and only then is a click the operator's turning
		// it off.
		if _, err := chromedp.Run(in.ctx, chromedp.Poll[bool](`document.getElementById("notify").checked`, chromedp.WithPollingTimeout(waitLimit))); err != nil {
			t.Fatalf("granted, the box never came on: %v", err)
		}
		in.toggle(false)
		do(t, in.ctx, chromedp.Reload())
		in.title("(1) aep-mcp-bridge inbox")
		in.settled()
		if diff := cmp.Diff(map[string]any{"asked": float64(0), "checked": false, "disabled": false, "says": "Notify me", "fits": true}, state()); diff != "" {
			t.Errorf("turned off, then reloaded (-want +got):\n%s", diff)
		}
		in.hide()
		in.ask("Rotate the billing key?")
		in.title("(2) aep-mcp-bridge inbox")
		in.show()
		in.toggle(true)
		in.hide()
		q3 := in.ask("Drain node eu-7?")
		got := in.notes(1)
		if diff := cmp.Diff([]note{{Title: "Question from elicit-test-server", Body: "Drain node eu-7?", Tag: "aep-mcp-bridge-inbox:" + q3.ID, Hidden: true}}, got); diff != "" {
			t.Errorf("notifications, the question asked while they were off first (-want +got):\n%s", diff)
		}
	})
}

// TestInboxNotificationShowsWhatTheEventCarries: a notification shows
// only what the question's event carries, at its capture level: at
// metadata, the bridge's synthesized prompt, never the server's text. The
// server's text is plain text in a notification, one line of it, without
// the characters that reorder or hide text.
func TestInboxNotificationShowsWhatTheEventCarries(t *testing.T) {
	t.Parallel()
	in := watchedInbox(t, screens[0], sessionConfig{opts: Options{AttentionCapture: aep.CaptureMetadata}}, true)
	in.open("aep-mcp-bridge inbox")
	in.hide()
	q := in.ask("Use the vault key of the billing service?\nIt expires tonight.")
	var data aep.AttentionRequested
	if err := json.Unmarshal(q.Data, &data); err != nil {
		t.Fatal(err)
	}
	if q.Capture != aep.CaptureMetadata || strings.Contains(data.Prompt, "vault") || data.Prompt == "" {
		t.Fatalf("the event at %v carries the prompt %q; the case is wrong", q.Capture, data.Prompt)
	}
	hook := newAsker(t, in.base, "hook-session")
	hostile := hook.permission("evil\u202e<b>server</b>\u2066 second", "\u202eAllow <img src=x onerror=alert(1)>?\u2028\u2066and this\nsecond line")
	nameless := hook.permission("\u202e\u2066\u2069", "\u202e")
	got := in.notes(3)
	want := []note{
		{Title: "Question from elicit-test-server", Body: strings.SplitN(data.Prompt, "\n", 2)[0], Tag: "aep-mcp-bridge-inbox:" + q.ID, Hidden: true},
		{Title: "Permission request from evil<b>server</b> second", Body: "Allow <img src=x onerror=alert(1)>?", Tag: "aep-mcp-bridge-inbox:" + hostile.ID, Hidden: true},
		{Title: "Permission request from an MCP server", Body: "", Tag: "aep-mcp-bridge-inbox:" + nameless.ID, Hidden: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the notifications (-want +got):\n%s", diff)
	}
	if n := eval[int](t, in.ctx, `document.querySelectorAll("img, b").length`); n != 0 {
		t.Errorf("the page built %d elements from a server's text", n)
	}
}

// TestInboxGathersABurst: many questions at once make one notification,
// not one each. The page's clock is held (virtual time, paused) while the
// questions arrive, so "at once" does not depend on the machine's load.
func TestInboxGathersABurst(t *testing.T) {
	t.Parallel()
	in := watchedInbox(t, screens[0], sessionConfig{}, true)
	in.open("aep-mcp-bridge inbox")
	in.hide()
	clock := func(p emulation.SetVirtualTimePolicyParams) {
		t.Helper()
		if _, err := chromedp.Call(in.ctx, emulation.SetVirtualTimePolicy, p); err != nil {
			t.Fatal(err)
		}
	}
	clock(emulation.SetVirtualTimePolicyParams{Policy: emulation.VirtualTimePolicyPause})
	hook := newAsker(t, in.base, "hook-session")
	var first aep.Event
	for i := range 5 {
		ev := hook.permission("shell-server", fmt.Sprintf("Allow step %d?", i+1))
		if i == 0 {
			first = ev
		}
	}
	in.title("(5) aep-mcp-bridge inbox")
	second := 1000.0
	clock(emulation.SetVirtualTimePolicyParams{Policy: emulation.VirtualTimePolicyAdvance, Budget: &second})
	got := in.notes(1)
	want := []note{{Title: "5 new questions", Body: "From shell-server", Tag: "aep-mcp-bridge-inbox:burst", Hidden: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the notifications (-want +got):\n%s", diff)
	}
	clock(emulation.SetVirtualTimePolicyParams{Policy: emulation.VirtualTimePolicyAdvance})
	qid := eval[string](t, in.ctx, `(() => { __watch.notes[0].dispatchEvent(new Event("click"));
	  const card = document.activeElement && document.activeElement.closest("article"); return card ? card.dataset.qid : ""; })()`)
	if qid != first.ID {
		t.Errorf("a click on the notification focused question %q; want the first of the burst, %s", qid, first.ID)
	}
}

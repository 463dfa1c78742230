package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// The tests in this file drive the inbox as an operator does, in headless
// Chromium, at a desktop width and at a phone's.

// viewport is a screen the inbox is tried on.
type viewport struct{ w, h int64 }

var screens = []viewport{{1280, 900}, {390, 844}}

// onScreens runs f once per screen, each in a browser of its own.
func onScreens(t *testing.T, f func(t *testing.T, v viewport)) {
	for _, v := range screens {
		t.Run(fmt.Sprintf("%dpx", v.w), func(t *testing.T) { f(t, v) })
	}
}

// demoQuestion is the demo server's question (cmd/aep-mcp-bridge demo):
// a required service name first, then a number of replicas from 1 to 10,
// a checkbox, a choice, up to two checks and an email.
const demoQuestion = `{"type":"object","properties":{
 "service":{"type":"string","title":"Service name","description":"The service to deploy, as named in the service catalog","minLength":2,"maxLength":40,"pattern":"^[a-z][a-z0-9-]*$"},
 "replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":10,"default":2},
 "canary":{"type":"boolean","title":"Start with a canary","default":true},
 "region":{"type":"string","title":"Region","oneOf":[{"const":"eu-west","title":"Europe (west)"},{"const":"us-east","title":"US (east)"}]},
 "checks":{"type":"array","title":"Checks to run","items":{"anyOf":[{"const":"smoke","title":"Smoke tests"},{"const":"load","title":"Load test"},{"const":"security","title":"Security scan"}]},"maxItems":2},
 "contact":{"type":"string","title":"On-call email","description":"Who is paged if the rollout fails","format":"email"}},
 "required":["service"]}`

// card is one question open in the inbox on one screen.
type card struct {
	s    *session
	ctx  context.Context
	sel  string            // the card's selector
	ids  map[string]string // field id -> its control's selector
	call <-chan callResult
	req  aep.Event
}

// onPlanesAndScreens runs f once per inbox plane and screen, each in a
// browser of its own.
func onPlanesAndScreens(t *testing.T, f func(t *testing.T, p string, v viewport)) {
	onPlanes(t, func(t *testing.T, p string) {
		onScreens(t, func(t *testing.T, v viewport) { f(t, p, v) })
	})
}

// openOn asks schema through a real bridge and opens the inbox on its card
// on screen v.
func openOn(t *testing.T, v viewport, schema string) card {
	t.Helper()
	return openOnPlane(t, "memory", v, schema)
}

// openOnPlane is openOn on the inbox plane p.
func openOnPlane(t *testing.T, p string, v viewport, schema string) card {
	t.Helper()
	s, url, ctx := inboxSessionOn(t, p)
	call := s.call("ask", map[string]any{"schema": schema, "message": "Plan the deployment of the checkout service"}, nil)
	req := s.next("attention.requested")
	var data aep.AttentionRequested
	json.Unmarshal(req.Data, &data)
	ids := map[string]string{}
	for i, f := range data.Fields {
		ids[f.ID] = fmt.Sprintf("#f-%s-%d", req.ID, i)
	}
	sel := `#pending article[data-qid="` + req.ID + `"]`
	do(t, ctx, chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(sel+" form")))
	return card{s: s, ctx: ctx, sel: sel, ids: ids, call: call, req: req}
}

// TestInboxClickIsNotLost types 12 in Replicas (above its maximum) and
// clicks "Smoke tests" with the mouse. The error Replicas shows when it is
// left must not move the page between the press and the release, or the
// click lands on nothing: the checkbox is checked, and it stood still.
func TestInboxClickIsNotLost(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		c := openOn(t, v, demoQuestion)
		smoke := c.ids["checks"] + "-0"
		eval[bool](t, c.ctx, `(() => { const box = document.querySelector(`+jsString(smoke)+`);
		  const top = () => box.getBoundingClientRect().top;
		  window.__moves = [];
		  document.addEventListener("mousedown", () => window.__moves.push(["down", top()]), true);
		  document.addEventListener("mouseup", () => window.__moves.push(["up", top()]), true);
		  return true; })()`)
		do(t, c.ctx,
			chromedp.Focus(chromedp.CSS(c.ids["replicas"])),
			chromedp.KeyEvent("\b\b12"), // the default 2 erased, then 12
			chromedp.ScrollIntoView(chromedp.CSS(smoke)),
			chromedp.Click(chromedp.CSS(smoke)))
		moves := eval[[][]any](t, c.ctx, `window.__moves`)
		checked := eval[bool](t, c.ctx, `document.querySelector(`+jsString(smoke)+`).checked`)
		replicas := eval[string](t, c.ctx, `document.querySelector(`+jsString(c.ids["replicas"])+`).value`)
		if replicas != "12" {
			t.Fatalf("Replicas holds %q; the test did not type 12", replicas)
		}
		// The last press and release are the click on Smoke tests.
		n := len(moves)
		if n < 2 || moves[n-2][0] != "down" || moves[n-1][0] != "up" {
			t.Fatalf("the mouse events seen: %v", moves)
		}
		if moves[n-2][1] != moves[n-1][1] {
			t.Errorf("Smoke tests moved from y=%v at the press to y=%v at the release", moves[n-2][1], moves[n-1][1])
		}
		if !checked {
			t.Errorf("the click on Smoke tests was lost: the box is not checked")
		}
		if got := text(t, c.ctx, c.ids["replicas"]+"-err"); !strings.Contains(got, "at most 10") {
			t.Errorf("Replicas says %q; want its maximum", got)
		}
	})
}

// rulesQuestion has a field for each kind of rule a field states.
const rulesQuestion = `{"type":"object","properties":{
 "service":{"type":"string","title":"Service name","minLength":2,"maxLength":40,"pattern":"^[a-z][a-z0-9-]*$"},
 "replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":10},
 "share":{"type":"number","title":"Traffic share","exclusiveMinimum":0,"exclusiveMaximum":1,"multipleOf":0.25},
 "contact":{"type":"string","title":"On-call email","format":"email"},
 "day":{"type":"string","title":"Day","format":"date"}},
 "required":["service"]}`

// TestInboxStatesAndChecksEachRuleAsTyped: each field states its whole
// rule, and a value that breaks it is refused under the field as it is
// typed, before the field is left, in the bridge's own words; a required
// field left empty says so when it is left. Nothing is sent.
func TestInboxStatesAndChecksEachRuleAsTyped(t *testing.T) {
	t.Parallel()
	form, err := translate.Parse("", json.RawMessage(rulesQuestion))
	if err != nil {
		t.Fatal(err)
	}
	onScreens(t, func(t *testing.T, v viewport) {
		c := openOn(t, v, rulesQuestion)
		hints := map[string]string{}
		for _, f := range []string{"service", "replicas", "share", "contact", "day"} {
			hints[f] = text(t, c.ctx, c.ids[f]+"-hint")
		}
		hints["day.placeholder"] = eval[string](t, c.ctx, `document.querySelector(`+jsString(c.ids["day"])+`).placeholder`)
		wantHints := map[string]string{
			"service":         "2 to 40 characters · matching the pattern ^[a-z][a-z0-9-]*$",
			"replicas":        "a whole number · from 1 to 10",
			"share":           "a number · greater than 0 · less than 1 · a multiple of 0.25",
			"contact":         "a valid email address",
			"day":             "a date, YYYY-MM-DD",
			"day.placeholder": "YYYY-MM-DD",
		}
		if diff := cmp.Diff(wantHints, hints); diff != "" {
			t.Errorf("the rules the fields state (-want +got):\n%s", diff)
		}
		setValues(t, c.ctx, map[string]string{c.ids["service"]: "billing"})
		for _, tc := range []struct{ field, typed string }{
			{"replicas", "2.5"}, {"replicas", "11"}, {"replicas", "0"},
			{"share", "0"}, {"share", "1"}, {"share", "0.3"},
			{"contact", "ops"}, {"day", "2026-02-30"},
			{"service", "Billing"}, {"service", "a"},
		} {
			values := map[string]any{"service": "billing"}
			if tc.field == "replicas" || tc.field == "share" {
				values[tc.field] = json.Number(tc.typed)
			} else {
				values[tc.field] = tc.typed
			}
			var ia *translate.InvalidAnswer
			if err := form.Validate(values); !errors.As(err, &ia) || ia.Field != tc.field {
				t.Fatalf("translate says %v for %v; the case is wrong", err, values)
			}
			sel := c.ids[tc.field]
			eval[bool](t, c.ctx, `(() => { const e = document.querySelector(`+jsString(sel)+`); e.value = ""; e.focus(); return true; })()`)
			do(t, c.ctx, chromedp.KeyEvent(tc.typed))
			got := text(t, c.ctx, sel+"-err")
			still := eval[bool](t, c.ctx, `document.activeElement === document.querySelector(`+jsString(sel)+`)`)
			if want := ia.Rule + ": " + ia.Reason; got != want || !still {
				t.Errorf("typing %q in %s: the field says %q (focus still there: %v); the bridge says %q", tc.typed, tc.field, got, still, want)
			}
			eval[bool](t, c.ctx, `(() => { const e = document.querySelector(`+jsString(sel)+`); e.value = ""; e.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`)
		}
		// A required field emptied while typing says nothing yet; left,
		// it says a value is required.
		sel := c.ids["service"]
		eval[bool](t, c.ctx, `(() => { const e = document.querySelector(`+jsString(sel)+`); e.value = ""; e.focus(); return true; })()`)
		do(t, c.ctx, chromedp.KeyEvent("x\b"))
		if got := text(t, c.ctx, sel+"-err"); got != "" {
			t.Errorf("while Service name is being typed in, it says %q", got)
		}
		do(t, c.ctx, chromedp.KeyEvent(kb.Tab))
		if got := text(t, c.ctx, sel+"-err"); got != "required: a value is required" {
			t.Errorf("Service name left empty says %q", got)
		}
		if n := countType(c.s, "control.attention.respond"); n != 0 {
			t.Fatalf("%d commands reached the bridge", n)
		}
	})
}

// TestInboxShowsARefusalAtItsField: a rule the page cannot check (a Go
// pattern JavaScript does not read) is refused by the bridge; the refusal
// shows under its field, which takes the focus, and every field keeps
// what was typed. Corrected, the answer goes through.
func TestInboxShowsARefusalAtItsField(t *testing.T) {
	t.Parallel()
	onPlanesAndScreens(t, func(t *testing.T, p string, v viewport) {
		c := openOnPlane(t, p, v, `{"type":"object","properties":{
		 "name":{"type":"string","title":"Name","pattern":"(?i)^[a-z]+$"},
		 "replicas":{"type":"integer","title":"Replicas"}},"required":["name"]}`)
		do(t, c.ctx,
			chromedp.SendKeys(chromedp.CSS(c.ids["name"]), "abc1"),
			chromedp.SendKeys(chromedp.CSS(c.ids["replicas"]), "3"),
			chromedp.Click(chromedp.CSS(c.sel+" button.primary")),
			chromedp.WaitVisible(chromedp.CSS(c.sel+" .field.invalid")))
		got := map[string]string{
			"error":    text(t, c.ctx, c.ids["name"]+"-err"),
			"invalid":  eval[string](t, c.ctx, `document.querySelector(`+jsString(c.ids["name"])+`).getAttribute("aria-invalid")`),
			"focus":    eval[string](t, c.ctx, `"#" + document.activeElement.id`),
			"name":     eval[string](t, c.ctx, `document.querySelector(`+jsString(c.ids["name"])+`).value`),
			"replicas": eval[string](t, c.ctx, `document.querySelector(`+jsString(c.ids["replicas"])+`).value`),
		}
		want := map[string]string{"error": "pattern: does not match the required pattern", "invalid": "true",
			"focus": c.ids["name"], "name": "abc1", "replicas": "3"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after the bridge's refusal (-want +got):\n%s", diff)
		}
		if ack := text(t, c.ctx, c.sel+" .ack"); !strings.Contains(ack, "rejected") {
			t.Errorf("the card's status says %q", ack)
		}
		if p == "memory" { // the page is the same on every plane
			shot(t, c.ctx, fmt.Sprintf("inbox-refusal-%dpx.png", v.w))
		}
		// Typing in the field takes the refusal away; the answer then goes.
		do(t, c.ctx, chromedp.KeyEvent("\b"))
		if got := text(t, c.ctx, c.ids["name"]+"-err"); got != "" {
			t.Errorf("after a correction the field still says %q", got)
		}
		do(t, c.ctx, chromedp.Click(chromedp.CSS(c.sel+" button.primary")))
		r := elicitResult(t, c.s.result(c.call))
		if content := compactAny(r["content"]); r["action"] != "accept" || content != `{"name":"abc","replicas":3}` {
			t.Fatalf("the server received %v", r)
		}
	})
}

// TestInboxHistoryShowsLabelsInFormOrder: an answered question's values
// are listed under the fields' labels in the form's order, choices by
// their labels, and a value the capture ceiling redacted says why.
func TestInboxHistoryShowsLabelsInFormOrder(t *testing.T) {
	t.Parallel()
	onPlanesAndScreens(t, func(t *testing.T, p string, v viewport) {
		c := openOnPlane(t, p, v, demoQuestion)
		setValues(t, c.ctx, map[string]string{c.ids["replicas"]: "3"})
		do(t, c.ctx,
			chromedp.SendKeys(chromedp.CSS(c.ids["service"]), "checkout"),
			chromedp.Click(chromedp.CSS(c.ids["region"]+"-0")),
			chromedp.Click(chromedp.CSS(c.ids["checks"]+"-0")),
			chromedp.Click(chromedp.CSS(c.ids["checks"]+"-1")),
			chromedp.SendKeys(chromedp.CSS(c.ids["contact"]), "ops@example.com"),
			chromedp.Click(chromedp.CSS(c.sel+" button.primary")))
		if r := elicitResult(t, c.s.result(c.call)); r["action"] != "accept" {
			t.Fatalf("the server received %v", r)
		}
		hist := `#history article[data-qid="` + c.req.ID + `"]`
		do(t, c.ctx, chromedp.WaitVisible(chromedp.CSS(hist+" dl")))
		rows := eval[[][]string](t, c.ctx, `Array.from(document.querySelectorAll('`+hist+` dt')).map(dt => {
		  const dd = dt.nextElementSibling, why = dd.querySelector(".why");
		  return [dt.textContent, dd.firstChild.textContent, why ? why.textContent : ""]; })`)
		want := [][]string{
			{"Service name", "checkout", ""},
			{"Replicas", "3", ""},
			{"Start with a canary", "yes", ""},
			{"Region", "Europe (west)", ""},
			{"Checks to run", "Smoke tests, Load test", ""},
			{"On-call email", "[REDACTED:pii]", "the bridge records free text at the redacted capture level, which removes email addresses and phone numbers; the server received it as typed"},
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("the history's values (-want +got):\n%s", diff)
		}
	})
}

// TestInboxLeavesAnUntouchedCheckboxOut: an optional checkbox the operator
// did not touch (and the server gave no default for) is not in the answer;
// one checked and unchecked again is sent as false.
func TestInboxLeavesAnUntouchedCheckboxOut(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		c := openOn(t, v, `{"type":"object","properties":{
		 "service":{"type":"string","title":"Service"},
		 "staged":{"type":"boolean","title":"Stage first"},
		 "dry":{"type":"boolean","title":"Dry run"}},"required":["service"]}`)
		do(t, c.ctx,
			chromedp.SendKeys(chromedp.CSS(c.ids["service"]), "billing"),
			chromedp.Click(chromedp.CSS(c.ids["dry"])),
			chromedp.Click(chromedp.CSS(c.ids["dry"])),
			chromedp.Click(chromedp.CSS(c.sel+" button.primary")))
		r := elicitResult(t, c.s.result(c.call))
		if got := compactAny(r["content"]); r["action"] != "accept" || got != `{"dry":false,"service":"billing"}` {
			t.Fatalf("the server received %v; want service and dry, and no staged", r)
		}
	})
}

// TestInboxTakesTheTokenOutOfTheURL: once the page has read the token in
// the link's fragment, neither the address bar nor the history has it; a
// reload of the tab still connects, and a new tab needs the link.
func TestInboxTakesTheTokenOutOfTheURL(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		c := openOn(t, v, demoQuestion)
		connected := chromedp.WaitVisible(chromedp.CSS("#status.up"))
		do(t, c.ctx, connected)
		hist, err := chromedp.Call(c.ctx, page.GetNavigationHistory, cdp.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		href := eval[string](t, c.ctx, `location.href`)
		if strings.Contains(href, "token") {
			t.Errorf("the address bar shows %s", href)
		}
		for _, e := range hist.Entries {
			if strings.Contains(e.URL, "token") {
				t.Errorf("the history holds %s", e.URL)
			}
		}
		do(t, c.ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(c.sel+" form")), connected)
		tab, cancel := chromedp.NewContext(c.ctx)
		defer cancel()
		do(t, tab, chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS("#notice")))
		if got := text(t, tab, "#status"); got != "no token" {
			t.Errorf("a new tab without the link says %q", got)
		}
	})
}

// TestInboxFitsTheRulesOnAPhone: a long pattern is shown whole, never
// broken inside, and nothing is wider than the screen.
func TestInboxFitsTheRulesOnAPhone(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		c := openOn(t, v, `{"type":"object","properties":{
		 "host":{"type":"string","title":"Host name","pattern":"^[a-z][a-z0-9-]*(\\.[a-z][a-z0-9-]*)*\\.internal-example$"},
		 "mail":{"type":"string","title":"Owner","pattern":"^[a-z0-9._%+-]+@(ops|sre|platform-engineering)\\.example\\.com$","minLength":6,"maxLength":80}}}`)
		for _, f := range []string{"host", "mail"} {
			got := eval[map[string]any](t, c.ctx, `(() => { const code = document.querySelector(`+jsString(c.ids[f]+"-hint code")+`);
			  const r = code.getBoundingClientRect();
			  return {lines: code.getClientRects().length, text: code.textContent, right: r.right, width: window.innerWidth,
			    wraps: code.scrollHeight > code.clientHeight + 1}; })()`)
			if got["lines"] != float64(1) || got["wraps"] == true || got["right"].(float64) > got["width"].(float64) {
				t.Errorf("the pattern of %s is broken or overflows: %v", f, got)
			}
		}
		if eval[bool](t, c.ctx, `document.documentElement.scrollWidth > window.innerWidth`) {
			t.Error("the page is wider than the screen")
		}
	})
}

// shot keeps a screenshot of the page among the test's artifacts.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// constraintSchema declares its fields out of alphabetical order, with
// descriptions, defaults, formats, lengths, a pattern and a secret.
const constraintSchema = `{"type":"object","properties":{
 "service":{"type":"string","title":"Service name","description":"As named in the catalog","minLength":2,"maxLength":8,"pattern":"^[a-z]+$"},
 "replicas":{"type":"number","title":"Replicas","minimum":-5,"maximum":1e3,"default":2},
 "canary":{"type":"boolean","title":"Canary first","default":true},
 "contact":{"type":"string","title":"On-call email","format":"email","default":"ops@example.com"},
 "runbook":{"type":"string","title":"Runbook","format":"uri"},
 "day":{"type":"string","title":"Day","format":"date","default":"2026-05-01"},
 "at":{"type":"string","title":"Start at","format":"date-time"},
 "api_token":{"type":"string","title":"Deploy token"},
 "region":{"type":"string","title":"Region","enum":["eu","us"],"enumNames":["Europe","America"],"default":"us"},
 "checks":{"type":"array","title":"Checks","items":{"enum":["smoke","load","security"]},"maxItems":2,"default":["smoke"]}},
 "required":["service"]}`

// openCard asks the schema through the bridge and opens the inbox on its
// card, on a phone-sized window; it returns the card's selector, its field
// ids and the call.
func openCard(t *testing.T, schema string) (*session, context.Context, string, map[string]string, <-chan callResult, aep.Event) {
	t.Helper()
	c := openOn(t, viewport{420, 900}, schema)
	return c.s, c.ctx, c.sel, c.ids, c.call, c.req
}

func TestInboxShowsConstraintsDefaultsAndFormats(t *testing.T) {
	s, ctx, card, ids, call, req := openCard(t, constraintSchema)
	labels := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('`+card+` .field')).map(f => (f.querySelector('label.name, legend, label.choice') || {}).textContent.replace(" (required)", ""))`)
	got := eval[map[string]string](t, ctx, `(() => { const v = (s) => document.querySelector(s); const o = {};
		  for (const [k, sel] of Object.entries(`+mustJSON(ids)+`)) { const e = v(sel); if (e && e.tagName === "INPUT") { o[k+".type"] = e.type; o[k+".value"] = e.type === "checkbox" ? String(e.checked) : e.value; } }
		  o["service.desc"] = v(`+jsString(ids["service"]+"-desc")+`).textContent;
		  o["service.hint"] = v(`+jsString(ids["service"]+"-hint")+`).textContent;
		  o["replicas.hint"] = v(`+jsString(ids["replicas"]+"-hint")+`).textContent;
		  o["checks.hint"] = v(`+jsString(ids["checks"]+"-hint")+`).textContent;
		  o["day.placeholder"] = v(`+jsString(ids["day"])+`).placeholder;
		  o["day.hint"] = v(`+jsString(ids["day"]+"-hint")+`).textContent;
		  o["contact.hint"] = v(`+jsString(ids["contact"]+"-hint")+`).textContent;
		  o["region.picked"] = v(`+jsString(ids["region"]+"-1")+`).checked ? "us" : "";
		  o["checks.picked"] = Array.from(document.querySelectorAll('`+card+` input[name="`+strings.TrimPrefix(ids["checks"], "#")+`"]:checked')).map(b => b.value).join(",");
		  return o; })()`)
	wantLabels := []string{"Service name", "Replicas", "Canary first", "On-call email", "Runbook", "Day", "Start at", "Deploy token", "Region", "Checks"}
	if diff := cmp.Diff(wantLabels, labels); diff != "" {
		t.Errorf("fields are not in the declared order (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"service.type": "text", "service.value": "", "service.desc": "As named in the catalog",
		"service.hint":  "2 to 8 characters · matching the pattern ^[a-z]+$",
		"replicas.type": "text", "replicas.value": "2", "replicas.hint": "a number · from -5 to 1000",
		"canary.type": "checkbox", "canary.value": "true",
		// An email default is redacted on the bus: it is not pre-filled.
		"contact.type": "email", "contact.value": "", "contact.hint": "a valid email address · the server's default is hidden by redaction",
		"runbook.type": "url", "runbook.value": "",
		// A date is typed in the one format its hint and placeholder name.
		"day.type": "text", "day.value": "2026-05-01", "day.placeholder": "YYYY-MM-DD", "day.hint": "a date, YYYY-MM-DD",
		"at.type": "datetime-local", "at.value": "",
		"api_token.type": "password", "api_token.value": "",
		"region.picked": "us", "checks.picked": "smoke", "checks.hint": "select at most 2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	// With the defaults and a few answers, the server gets typed content;
	// the datetime-local value travels as RFC 3339.
	setValues(t, ctx, map[string]string{ids["at"]: "2026-05-01T09:30:00"})
	do(t, ctx,
		chromedp.SendKeys(chromedp.CSS(ids["service"]), "billing"),
		chromedp.SendKeys(chromedp.CSS(ids["api_token"]), "s3cret-value"),
		chromedp.Click(chromedp.CSS(card+" button.primary")))
	c := elicitResult(t, s.result(call))["content"].(map[string]any)
	at, _ := c["at"].(string)
	if c["service"] != "billing" || c["replicas"].(json.Number).String() != "2" || c["canary"] != true || c["contact"] != nil ||
		c["day"] != "2026-05-01" || !strings.HasPrefix(at, "2026-05-01T09:30:00") || c["api_token"] != "s3cret-value" ||
		c["region"] != "us" || compactAny(c["checks"]) != `["smoke"]` {
		t.Fatalf("the server received %v", c)
	}
	if req.Subject == "" {
		t.Error("the question names no server")
	}
}

// TestInboxChecksWithTheBridgesWording types invalid answers into the
// form and compares what the page says with what translate says for the
// same values: the same message, word for word, and nothing is sent.
func TestInboxChecksWithTheBridgesWording(t *testing.T) {
	s, ctx, card, ids, call, _ := openCard(t, constraintSchema)
	form, err := translate.Parse("", json.RawMessage(constraintSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, field, input string
	}{
		{"required", "service", ""},
		{"too short", "service", "a"},
		{"too long", "service", "abcdefghij"},
		{"pattern", "service", "Billing"},
		{"not a JSON number", "replicas", "12abc"},
		{"a leading zero", "replicas", "01"},
		{"below the minimum", "replicas", "-6"},
		{"above a maximum written 1e3", "replicas", "1000.5"},
		{"too large for a double", "replicas", "1e400"},
		{"too small for a double", "replicas", "1e-400"},
		{"an address with two @", "contact", "a@b@example.com"},
		{"an address with a double dot", "contact", "a..b@example.com"},
		{"no address at all", "contact", "ops"},
		{"a URI without a scheme", "runbook", "example.com/runbook"},
		{"a URI with a bad escape", "runbook", "https://example.com/%zz"},
		{"a URI with a space", "runbook", "https://example.com/run book"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]any{"service": "billing"}
			set := map[string]string{ids["service"]: "billing", ids["replicas"]: "", ids["contact"]: "", ids["runbook"]: ""}
			set[ids[tc.field]] = tc.input
			setValues(t, ctx, set)
			if tc.input == "" {
				delete(values, tc.field)
			} else if tc.field == "replicas" {
				values[tc.field] = json.Number(tc.input)
			} else {
				values[tc.field] = tc.input
			}
			var ia *translate.InvalidAnswer
			if err := form.Validate(values); !errors.As(err, &ia) {
				t.Fatalf("translate accepts %v (%v); the case is wrong", values, err)
			}
			do(t, ctx, chromedp.Click(chromedp.CSS(card+" button.primary")), chromedp.WaitVisible(chromedp.CSS(card+" .ack.local")))
			page := text(t, ctx, card+" .ack")
			fieldErr := text(t, ctx, ids[tc.field]+"-err")
			if page != ia.Error() {
				t.Errorf("the page says %q; the bridge says %q", page, ia.Error())
			}
			if want := ia.Rule + ": " + ia.Reason; fieldErr != want {
				t.Errorf("under the field: %q; want %q", fieldErr, want)
			}
			eval[string](t, ctx, `document.querySelector('`+card+` .ack').className = "ack"`)
		})
	}
	// Nothing the page refused was sent: the question is still open, and
	// no command reached the bridge.
	select {
	case r := <-call:
		t.Fatalf("a refused answer reached the server: %v", r)
	default:
	}
	if n := countType(s, "control.attention.respond"); n != 0 {
		t.Fatalf("%d commands reached the bridge", n)
	}
}

// countType counts the events of a type the session has published so far.
func countType(s *session, typ string) int {
	n := 0
	for {
		select {
		case d := <-s.events.C:
			if d.Event.Type == typ {
				n++
			}
		default:
			return n
		}
	}
}

// do runs browser actions, failing the test on an error.
func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// setValues sets inputs' values as a paste would: the value, then input
// and change events.
func setValues(t *testing.T, ctx context.Context, values map[string]string) {
	t.Helper()
	eval[bool](t, ctx, `(() => { for (const [sel, v] of Object.entries(`+mustJSON(values)+`)) { const e = document.querySelector(sel);
	  e.value = v; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); } return true; })()`)
}

// text is the text of the element sel selects.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestInboxKeyboardOnlyAtPhoneWidth answers a question at 390 px with the
// keyboard alone: the skip link, Tab, typing, Space and the arrow keys, and
// Enter to submit; nothing on the page is wider than the screen.
func TestInboxKeyboardOnlyAtPhoneWidth(t *testing.T) {
	s, ctx, card, _, call, _ := openCard(t, `{"type":"object","properties":{
	 "service":{"type":"string","title":"Service","minLength":2},
	 "replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":9},
	 "canary":{"type":"boolean","title":"Canary"},
	 "region":{"type":"string","title":"Region","enum":["eu","us"]}},"required":["service"]}`)
	do(t, ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.WaitVisible(chromedp.CSS(card+" form")))
	overflow := eval[bool](t, ctx, `document.documentElement.scrollWidth > window.innerWidth`)
	do(t, ctx,
		chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter), // the skip link, to the open questions
		chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("x"), // Service: too short
		chromedp.KeyEvent(kb.Enter), // submit: refused by the page, focus back on the field
		chromedp.WaitVisible(chromedp.CSS(card+" .ack.local")))
	focused := eval[string](t, ctx, `document.activeElement.closest(".field").querySelector("label").textContent`)
	if overflow {
		t.Error("the page is wider than a 390 px screen")
	}
	if !strings.HasPrefix(focused, "Service") {
		t.Errorf("after a refused submit the focus is on %q; want the invalid field", focused)
	}
	do(t, ctx,
		chromedp.KeyEvent("ray"),
		chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("4"),
		chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(" "), // Canary: checked
		chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.ArrowDown), // Region: the arrow picks the next radio
		chromedp.KeyEvent(kb.Tab))
	if got := eval[string](t, ctx, `document.activeElement.textContent`); got != "Submit" {
		t.Fatalf("Tab after the last field reached %q; want Submit", got)
	}
	do(t, ctx, chromedp.KeyEvent(kb.Enter)) // Submit
	got := elicitResult(t, s.result(call))
	c, _ := got["content"].(map[string]any)
	if got["action"] != "accept" || c["service"] != "xray" || fmt.Sprint(c["replicas"]) != "4" || c["canary"] != true || c["region"] != "us" {
		t.Fatalf("the server received %v", got)
	}
}

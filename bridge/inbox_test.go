package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// chromium returns Debian's Chromium, skipping outside CI when it is absent.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testenv.Missing(t, "Debian's Chromium", "apt-get install chromium (.ci/run does)")
	return ""
}

// inboxSession is a real bridge in front of the mcp-go server, its endpoint
// serving the inbox, and a headless Chromium on the inbox page.
func inboxSession(t *testing.T) (*session, string, context.Context) {
	t.Helper()
	ctx := newBrowser(t)
	s := startSession(t, sessionConfig{})
	base := s.serve("inbox-token")
	return s, base + "/#token=inbox-token", ctx
}

// failGuard bounds a browser's whole life in a test: a failure guard for a
// machine under load, never a wait.
const failGuard = 4 * time.Minute

// newBrowser starts a headless Chromium with a phone-sized window and
// returns the context of its first tab. Anything a page throws that
// nothing catches fails the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(420, 900)) // a phone-sized screen
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	var mu sync.Mutex
	var thrown []string
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			d := e.ExceptionDetails
			desc := d.Text
			if d.Exception != nil {
				desc += " " + d.Exception.Description
			}
			mu.Lock()
			thrown = append(thrown, fmt.Sprintf("%s (line %d, column %d)", desc, d.LineNumber+1, d.ColumnNumber+1))
			mu.Unlock()
		}
	}))
	ctx, cancelT := context.WithTimeout(ctx, failGuard)
	t.Cleanup(func() {
		cancelT()
		cancelC()
		cancelA()
		mu.Lock()
		defer mu.Unlock()
		for _, e := range thrown {
			t.Errorf("the page threw: %s", e)
		}
	})
	return ctx
}

const inboxSchema = `{"type":"object","properties":{
 "service":{"type":"string","title":"Service name"},
 "replicas":{"type":"integer","title":"Replicas","minimum":1,"exclusiveMaximum":6},
 "staged":{"type":"boolean","title":"Stage first"},
 "region":{"type":"string","title":"Region","enum":["eu","us"],"enumNames":["Europe","America"]},
 "features":{"type":"array","title":"Features","items":{"type":"string","enum":["a","b","c"]}}},
 "required":["service"]}`

// TestInboxAnswersEveryFieldType: every field type is answered in the
// inbox, a value the page can check is refused before sending, and the
// accepted answer reaches the server and the history.
func TestInboxAnswersEveryFieldType(t *testing.T) { onPlanes(t, testInboxAnswersEveryFieldType) }

func testInboxAnswersEveryFieldType(t *testing.T, p string) {
	s, url, ctx := inboxSessionOn(t, p)
	call := s.call("ask", map[string]any{"schema": inboxSchema, "message": "Deploy <b>now</b>?"}, nil)
	req := s.next("attention.requested")
	var data aep.AttentionRequested
	json.Unmarshal(req.Data, &data)
	ids := map[string]string{}
	for i, f := range data.Fields {
		ids[f.ID] = "#f-" + req.ID + "-" + string(rune('0'+i))
	}
	card := `article[data-qid="` + req.ID + `"]`
	fillInboxForm(t, ctx, url, card, ids)
	submitRejected(t, ctx, card, ids)
	// A value under the form's min is caught in the page before sending.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(ids["replicas"]), "0"),
		chromedp.Click(chromedp.CSS(card+" button.primary")),
		chromedp.WaitVisible(chromedp.CSS(ids["replicas"]+"-err")),
	); err != nil {
		t.Fatal(err)
	}
	clientErr, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(ids["replicas"]+"-err")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(clientErr, "at least 1") {
		t.Errorf("client-side check said %q", clientErr)
	}
	// Corrected, the answer is accepted: the card moves to the history
	// list, which says so.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(ids["replicas"]), "3"),
		chromedp.Click(chromedp.CSS(card+" button.primary")),
	); err != nil {
		t.Fatal(err)
	}
	got := elicitResult(t, s.result(call))
	c := got["content"].(map[string]any)
	if got["action"] != "accept" || c["service"] != "billing" || c["replicas"].(json.Number).String() != "3" ||
		c["staged"] != true || c["region"] != "us" || compactAny(c["features"]) != `["a","c"]` {
		t.Fatalf("the server received %v", got)
	}
	hsel := chromedp.CSS(`#history article[data-qid="` + req.ID + `"]`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(hsel)); err != nil {
		t.Fatal(err)
	}
	hist, err := chromedp.Run(ctx, chromedp.Text(hsel))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hist, "Accepted by token holder through the AEP endpoint") {
		t.Errorf("history shows %q", hist)
	}
}

// fillInboxForm opens the inbox, fills every field of the card, checks that
// the server's text is shown verbatim as text, and keeps a screenshot.
func fillInboxForm(t *testing.T, ctx context.Context, url, card string, ids map[string]string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(card+" form")),
		chromedp.SendKeys(chromedp.CSS(ids["service"]), "billing"),
		chromedp.SendKeys(chromedp.CSS(ids["replicas"]), "9"), // within the form's min, past the schema's exclusiveMaximum
		chromedp.Click(chromedp.CSS(ids["staged"])),
		chromedp.Click(chromedp.CSS(ids["region"]+"-1")),
		chromedp.Click(chromedp.CSS(ids["features"]+"-0")),
		chromedp.Click(chromedp.CSS(ids["features"]+"-2")),
	); err != nil {
		t.Fatal(err)
	}
	quoted, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+" blockquote.untrusted")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(quoted, "Deploy <b>now</b>?") {
		t.Errorf("the server's text is not shown verbatim as text: %q", quoted)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), "inbox-filled-form.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the filled form: %s", path)
}

// submitRejected submits the filled form, whose replicas break the schema,
// and checks the card shows the bridge's rejection and keeps what was typed.
func submitRejected(t *testing.T, ctx context.Context, card string, ids map[string]string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(card+" button.primary")),
		chromedp.WaitVisible(chromedp.CSS(card+" .ack.rejected")),
	); err != nil {
		t.Fatal(err)
	}
	ack, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+" .ack")))
	if err != nil {
		t.Fatal(err)
	}
	service, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(ids["service"])))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ack, `"replicas"`) || !strings.Contains(ack, "exclusiveMaximum") {
		t.Fatalf("rejection shown as %q; want the server's detail naming the field and rule", ack)
	}
	if service != "billing" {
		t.Fatalf("the typed fields were not kept: service=%q", service)
	}
}

// TestInboxDecline: a question declined in the inbox is declined on the
// server, and the history says by whom, through what and when.
func TestInboxDecline(t *testing.T) { onPlanes(t, testInboxDecline) }

func testInboxDecline(t *testing.T, p string) {
	s, url, ctx := inboxSessionOn(t, p)
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	card := `article[data-qid="` + req.ID + `"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(card+" form")),
		chromedp.Click(chromedp.CSS(card+` .actions button:nth-of-type(2)`)),
		chromedp.WaitVisible(chromedp.CSS(`#history article[data-qid="`+req.ID+`"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" {
		t.Fatalf("server got %v", got)
	}
	// The history says how it ended, who answered, through what, and when.
	hsel := `#history article[data-qid="` + req.ID + `"] .outcome`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(hsel+" time"))); err != nil {
		t.Fatal(err)
	}
	hist, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(hsel)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hist, "Declined by token holder through the AEP endpoint at ") {
		t.Errorf("history says %q", hist)
	}
}

func compactAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestInboxURLQuestionShowsTheDomain(t *testing.T) {
	s, url, ctx := inboxSession(t)
	call := s.call("ask-url", map[string]any{"id": "el-7", "url": "https://auth.example.org/start?x=1"}, nil)
	req := s.next("attention.requested")
	card := `article[data-qid="` + req.ID + `"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(card+" .domain strong"))); err != nil {
		t.Fatal(err)
	}
	host, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+" .domain")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(host, "auth.example.org") || !strings.Contains(host, "elicit-test-server") {
		t.Fatalf("card says %q; want who asks and the full domain", host)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card+" .actions button.primary"))); err != nil {
		t.Fatal(err)
	}
	if got := compactAny(elicitResult(t, s.result(call))); got != `{"action":"accept"}` {
		t.Fatalf("server got %s", got)
	}
}

package bridge

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// ndjson collects events as an emitter stamps them.
type ndjson struct{ lines [][]byte }

func (n *ndjson) Write(_ aep.Event, raw []byte) error {
	n.lines = append(n.lines, append([]byte(nil), raw...))
	return nil
}

// ingest POSTs events to the endpoint in batches under its body limit.
func ingest(t *testing.T, base, token string, lines [][]byte) {
	t.Helper()
	for len(lines) > 0 {
		var body bytes.Buffer
		for len(lines) > 0 && body.Len()+len(lines[0]) < 900<<10 {
			body.Write(lines[0])
			body.WriteByte('\n')
			lines = lines[1:]
		}
		req, _ := http.NewRequest("POST", base+"/events", &body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("AEP-Version", aep.Version)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("ingest: %s", resp.Status)
		}
	}
}

// emitted stamps events of one session with an emitter.
func emitted(t *testing.T, session string, drafts ...aep.Draft) [][]byte {
	t.Helper()
	out := &ndjson{}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "load", Session: session, Sinks: []bus.Sink{out}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drafts {
		if _, _, err := em.Emit(d); err != nil {
			t.Fatal(err)
		}
	}
	return out.lines
}

// TestInboxCountsTenThousandOpenQuestions ingests 10,000 open questions
// across ten sessions, then 300 sessions of noise that push them all out
// of replay. A fresh inbox must still count every one in its header and
// tab title, and show them a page at a time.
func TestInboxCountsTenThousandOpenQuestions(t *testing.T) {
	s, url, ctx := inboxSession(t)
	base := strings.TrimSuffix(url, "/#token=inbox-token")
	const sessions, perSession = 10, 1000
	var lines [][]byte
	for i := 0; i < sessions; i++ {
		drafts := make([]aep.Draft, perSession)
		for j := range drafts {
			drafts[j] = aep.Draft{Type: "attention.requested", Subject: "load-server", Capture: aep.CaptureRedacted,
				Data: aep.AttentionRequested{Kind: "form", Prompt: fmt.Sprintf("Question %d of session %d", j, i), RespondVia: []string{"control"},
					Fields: []aep.FieldSpec{{ID: "ok", Type: "boolean", Label: "OK"}}}}
		}
		lines = append(lines, emitted(t, fmt.Sprintf("load-%02d", i), drafts...)...)
	}
	for i := 0; i < 300; i++ {
		lines = append(lines, emitted(t, fmt.Sprintf("noise-%03d", i), aep.Draft{Type: "session.started"})...)
	}
	ingest(t, base, "inbox-token", lines)

	do(t, ctx, chromedp.Navigate(url))
	// The inbox counts the questions as they reach it, as fast as the
	// machine lets it: it is waited for while its count moves, and fails
	// once the count stands still for waitLimit short of 10,000.
	shown := ""
	for shown != "10,000 open questions" {
		moved, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(() => { const c = document.getElementById("count").textContent;
		  return c === "10,000 open questions" || c !== %q ? c : false; })()`, shown), chromedp.WithPollingTimeout(waitLimit)))
		if err != nil {
			t.Fatalf("the inbox never counted 10,000 open questions; it shows %q, unchanged for %v (%v)", text(t, ctx, "#count"), waitLimit, err)
		}
		shown = moved
	}
	if title := eval[string](t, ctx, `document.title`); title != "(10,000) aep-mcp-bridge inbox" {
		t.Errorf("tab title %q", title)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#pending article").length`); n != 20 {
		t.Errorf("%d cards on the page; want one page of 20", n)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#next")))
	if info := text(t, ctx, "#page-info"); info != "Questions 21–40 of 10,000" {
		t.Errorf("after Later: %q", info)
	}
	// A question asked now is counted at once.
	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title === "(10,001) aep-mcp-bridge inbox"`, chromedp.WithPollingTimeout(waitLimit))); err != nil {
		t.Fatalf("a new question was not counted: title %q, count %q", eval[string](t, ctx, `document.title`), text(t, ctx, "#count"))
	}
	t.Logf("the header said %q", shown)
}

// TestInboxShowsURLsAsText shows URL questions: an https one with its
// domain, its full address as text and a link; a javascript: one with no
// link at all and a warning.
func TestInboxShowsURLsAsText(t *testing.T) {
	_, url, ctx := inboxSession(t)
	base := strings.TrimSuffix(url, "/#token=inbox-token")
	options := []aep.Choice{{ID: "accept", Label: "Open and accept"}, {ID: "decline", Label: "Decline"}, {ID: "cancel", Label: "Cancel"}}
	ask := func(u string) aep.Draft {
		return aep.Draft{Type: "attention.requested", Subject: "auth-server", Capture: aep.CaptureRedacted,
			Data: aep.AttentionRequested{Kind: "auth", Prompt: "Sign in\nURL: " + u, Options: options, RespondVia: []string{"control"}}}
	}
	lines := emitted(t, "urls", ask("https://login.example.org/authorize?state=abc"), ask("javascript://example.com/%0aalert(document.domain)"))
	ingest(t, base, "inbox-token", lines)
	ids := make([]string, 2)
	for i, l := range lines {
		ev, err := aep.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = `#pending article[data-qid="` + ev.ID + `"]`
	}
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ids[1]+" .url code")))
	if got := text(t, ctx, ids[0]+" .domain"); got != "auth-server asks you to open a page on login.example.org" {
		t.Errorf("https question says %q", got)
	}
	if got := text(t, ctx, ids[0]+" .url code"); got != "https://login.example.org/authorize?state=abc" {
		t.Errorf("https question's address: %q", got)
	}
	if href := eval[string](t, ctx, `document.querySelector('`+ids[0]+` a').href`); href != "https://login.example.org/authorize?state=abc" {
		t.Errorf("https link: %q", href)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('`+ids[1]+` a').length`); n != 0 {
		t.Errorf("the javascript: question has %d links; want none", n)
	}
	if got := text(t, ctx, ids[1]+" .domain"); !strings.Contains(got, "not a web page (javascript:)") || strings.Contains(got, "a page on") {
		t.Errorf("javascript: question says %q", got)
	}
	if got := text(t, ctx, ids[1]+" .url code"); got != "javascript://example.com/%0aalert(document.domain)" {
		t.Errorf("javascript: question's address: %q", got)
	}
}

// TestInboxSetsAbandonedQuestionsAside: a question more than
// bus.ExpiredGrace past its expires_at, whose asker never timed it out
// (a process killed), is not counted as open: the hub no longer holds it,
// and the inbox, reading it from the history, shows it as abandoned, while
// one that has not expired stays open.
func TestInboxSetsAbandonedQuestionsAside(t *testing.T) {
	_, url, ctx := inboxSession(t)
	base := strings.TrimSuffix(url, "/#token=inbox-token")
	ask := func(prompt string, expires time.Time) aep.Draft {
		return aep.Draft{Type: "attention.requested", Subject: "gone-server", Capture: aep.CaptureRedacted,
			Data: aep.AttentionRequested{Kind: "form", Prompt: prompt, RespondVia: []string{"control"}, ExpiresAt: aep.FormatTime(expires),
				Fields: []aep.FieldSpec{{ID: "ok", Type: "boolean", Label: "OK"}}}}
	}
	now := time.Now()
	lines := emitted(t, "crashed", ask("asked by a process that was killed", now.Add(-bus.ExpiredGrace-time.Minute)),
		ask("still waiting", now.Add(time.Hour)))
	ingest(t, base, "inbox-token", lines)
	abandoned, err := aep.Parse(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	card := `#history article[data-qid="` + abandoned.ID + `"]`
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(card)))
	if got := text(t, ctx, card+" .outcome"); !strings.HasPrefix(got, "Abandoned") {
		t.Errorf("the abandoned question's card says %q", got)
	}
	if got := text(t, ctx, "#count"); got != "1 open question" {
		t.Errorf("the header says %q; want the one question still waiting", got)
	}
}

package bridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// inboxPolicy holds the echo tool for the inbox's operator (the token's
// holder) and alice: two approvals for messages that start with "two",
// one for "one".
const inboxPolicy = `
rules:
  - id: two-echo
    tool: echo
    when: 'args.message.startsWith("two")'
    action: ask
    approvers: [alice, token holder]
    approvals: 2
  - id: one-echo
    tool: echo
    when: 'args.message.startsWith("one")'
    action: ask
    approvers: [token holder]
`

// permissionInbox is a bridge under inboxPolicy, its inbox open in
// Chromium on screen v.
func permissionInbox(t *testing.T, v viewport) (*policySession, context.Context) {
	t.Helper()
	ctx := newBrowser(t)
	ps := startPolicySession(t, inboxPolicy)
	base := ps.serve("inbox-token")
	do(t, ctx, chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(base+"/#token=inbox-token"))
	return ps, ctx
}

// poll waits until the page's expression is true.
func poll(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitLimit))); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// fitsTheScreen fails the test when anything on the page is wider than
// the screen.
func fitsTheScreen(t *testing.T, ctx context.Context) {
	t.Helper()
	if w := eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`); !w {
		t.Errorf("the page is wider than the %v px screen", eval[float64](t, ctx, `window.innerWidth`))
	}
}

// TestInboxPermissionTwoApprovals: the card shows the held call and
// "0 of 2"; alice's approval elsewhere turns it to "1 of 2: alice"; the
// inbox's Allow is the second, and the call runs.
func TestInboxPermissionTwoApprovals(t *testing.T) {
	for _, v := range screens {
		t.Run(fmt.Sprintf("%dpx", v.w), func(t *testing.T) {
			ps, ctx := permissionInbox(t, v)
			call := ps.call("echo", map[string]any{"message": "two: rotate keys"}, nil)
			req := ps.next("attention.requested")
			card := `#pending article[data-qid="` + req.ID + `"]`
			do(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+" .approvals")))
			if got := text(t, ctx, card+" .approvals"); got != "0 of 2 approvals" {
				t.Errorf("approvals line %q; want 0 of 2 approvals", got)
			}
			facts := text(t, ctx, card+" dl.permission")
			for _, want := range []string{"Tool", "echo", "Server", "elicit-test-server", "Policy rule", "two-echo"} {
				if !strings.Contains(facts, want) {
					t.Errorf("the card's facts %q lack %q", facts, want)
				}
			}
			if prompt := text(t, ctx, card+" blockquote"); !strings.Contains(prompt, "two: rotate keys") {
				t.Errorf("the card's request %q does not show the arguments", prompt)
			}
			if res := ps.vote(req.ID, "alice", aep.Answer{Option: "allow"}); !res.Accepted() {
				t.Fatalf("alice's approval: %s", res.Raw)
			}
			poll(t, ctx, "1 of 2", `document.querySelector(`+jsString(card+" .approvals")+`).textContent === "1 of 2 approvals: alice"`)
			fitsTheScreen(t, ctx)
			if dir := os.Getenv("AEP_INBOX_SHOTS"); dir != "" {
				png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("permission-%d.png", v.w)), png, 0o644)
			}
			do(t, ctx, chromedp.Click(chromedp.CSS(card+` button[data-verdict="allow"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#history article[data-qid="`+req.ID+`"] .outcome time`)))
			if got := toolText(t, ps.result(call)); got != "two: rotate keys" {
				t.Fatalf("the approved call returned %q", got)
			}
			if got := text(t, ctx, `#history article[data-qid="`+req.ID+`"] .outcome`); !strings.HasPrefix(got, "Allowed by token holder") {
				t.Errorf("history says %q", got)
			}
		})
	}
}

// TestInboxPermissionDenyWithReason: Deny sends the reason typed, and
// the model reads it in the tool result; the server never gets the call.
func TestInboxPermissionDenyWithReason(t *testing.T) {
	for _, v := range screens {
		t.Run(fmt.Sprintf("%dpx", v.w), func(t *testing.T) {
			ps, ctx := permissionInbox(t, v)
			call := ps.call("echo", map[string]any{"message": "one: wipe cache"}, nil)
			req := ps.next("attention.requested")
			card := `#pending article[data-qid="` + req.ID + `"]`
			do(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button[data-verdict="deny"]`)))
			if got := text(t, ctx, card+" .approvals"); got != "0 of 1 approval" {
				t.Errorf("approvals line %q; want 0 of 1 approval", got)
			}
			fitsTheScreen(t, ctx)
			setValues(t, ctx, map[string]string{card + " input[type=text]": "not on a Friday"})
			do(t, ctx, chromedp.Click(chromedp.CSS(card+` button[data-verdict="deny"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#history article[data-qid="`+req.ID+`"] .outcome time`)))
			res := ps.result(call)
			if !res.IsError || !strings.Contains(toolText(t, res), "not on a Friday") {
				t.Fatalf("denied call: isError %v text %q", res.IsError, toolText(t, res))
			}
			if got := text(t, ctx, `#history article[data-qid="`+req.ID+`"] .outcome`); !strings.HasPrefix(got, "Denied (not on a Friday) by token holder") {
				t.Errorf("history says %q", got)
			}
			ps.settle()
			if ps.serverGot("wipe cache") {
				t.Fatal("the server received the denied call")
			}
		})
	}
}

package bridge

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"
)

// addOperator runs the binary's operators add against state and returns
// the credential it printed.
func addOperator(t *testing.T, state string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bridgeBinary(t), append(append([]string{"operators", "add"}, args...), "--state-dir", state)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("operators add %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestInboxShowsEachOperatorItsScope runs a hub whose gateway fronts
// deploy-web and a gateway joined to it that fronts billing, each with a
// client that asks, and opens the inbox in Chromium three times: as
// alice (answers deploy-*), carol (answers billing) and bob (reads
// billing). Each page shows who it is and the questions of its servers
// only; alice's and carol's declines are recorded under their names; bob's
// page shows billing's question without a form; and revoking alice signs
// her page out.
func TestInboxShowsEachOperatorItsScope(t *testing.T) {
	t.Parallel()
	bin := bridgeBinary(t)
	state := t.TempDir()
	creds := map[string]string{
		"alice": addOperator(t, state, "alice", "--servers", "deploy-*"),
		"carol": addOperator(t, state, "carol", "--servers", "billing"),
		"bob":   addOperator(t, state, "bob", "--can", "read", "--servers", "billing"),
	}
	hub := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off",
		"--route", "remote", "--name", "deploy-web", "--", bin, "demo-server")
	base := hub.address(t, hub.errb, "AEP endpoint on ")
	billing := startProcess(t, "serve", "--listen", strings.TrimPrefix(base, "http://"), "--mcp-listen", "127.0.0.1:0", "--state-dir", state,
		"--log-dir", "off", "--route", "remote", "--name", "billing", "--", bin, "demo-server")
	mcpToken := readToken(t, filepath.Join(state, "mcp-token"))
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan error, 2)
	for _, mcpURL := range []string{hub.address(t, hub.errb, "MCP gateway on ") + "/mcp", billing.address(t, billing.errb, "MCP gateway on ") + "/mcp"} {
		c := gatewayClient(t, cctx, mcpURL, mcpToken, "client", "1")
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "deploy"
			_, err := c.CallTool(cctx, req)
			results <- err
		}()
	}

	browser := newBrowser(t)
	pages := map[string]context.Context{}
	for _, who := range []string{"alice", "carol", "bob"} {
		tab := browser // the first tab starts the browser; the others open in it
		if who != "alice" {
			var closeTab context.CancelFunc
			tab, closeTab = chromedp.NewContext(browser)
			t.Cleanup(closeTab)
		}
		pages[who] = tab
		do(t, tab, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/#token="+creds[who]),
			chromedp.WaitVisible(chromedp.CSS("#status.up")), chromedp.WaitVisible(chromedp.CSS("#pending .card")))
	}
	for who, want := range map[string]struct{ who, server string }{
		"alice": {"alice · answers deploy-*", "deploy-web"},
		"carol": {"carol · answers billing", "billing"},
		"bob":   {"bob · reads billing", "billing"},
	} {
		if got := text(t, pages[who], "#who"); got != want.who {
			t.Errorf("%s's page says it is %q; want %q", who, got, want.who)
		}
		servers := eval[[]string](t, pages[who], `Array.from(document.querySelectorAll("#pending .card h3")).map(h => h.textContent)`)
		if len(servers) != 1 || servers[0] != want.server {
			t.Errorf("%s's page shows the questions of %v; want %s's only", who, servers, want.server)
		}
	}
	if n := eval[int](t, pages["bob"], `document.querySelectorAll("#pending .card form, #pending .card .actions button").length`); n != 0 ||
		!strings.Contains(text(t, pages["bob"], "#pending .card .readonly"), "You may read this question, not answer it") {
		t.Errorf("bob's page offers %d answer controls, or does not say he may only read", n)
	}

	// alice and carol decline their own; the history says who.
	for _, who := range []string{"alice", "carol"} {
		do(t, pages[who], chromedp.Click(chromedp.CSS(`#pending .card .actions button:nth-of-type(2)`)), // Decline
			chromedp.WaitVisible(chromedp.CSS("#history .card")))
		if hist := text(t, pages[who], "#history .card"); !strings.Contains(hist, "Declined by "+who+" through the AEP endpoint") {
			t.Errorf("%s's history says %q; want her decline recorded under her name", who, hist)
		}
		select {
		case err := <-results:
			if err != nil {
				t.Errorf("a client's call: %v", err)
			}
		case <-time.After(failGuard):
			t.Fatalf("no client's call ended after %s's decline", who)
		}
	}
	do(t, pages["bob"], chromedp.WaitVisible(chromedp.CSS("#history .card")))
	if hist := text(t, pages["bob"], "#history .card"); !strings.Contains(hist, "Declined by carol") {
		t.Errorf("bob's history says %q; want carol's decline", hist)
	}
	// Nothing of the other server ever reached a page.
	for who, other := range map[string]string{"alice": "billing", "carol": "deploy-web", "bob": "deploy-web"} {
		if body := eval[string](t, pages[who], `document.body.innerText`); strings.Contains(body, other) || strings.Contains(body, "Declined by "+map[string]string{"alice": "carol", "carol": "alice", "bob": "alice"}[who]) {
			t.Errorf("%s's page shows something of %s:\n%s", who, other, body)
		}
	}

	// Revoking alice signs her page out.
	if out, err := exec.Command(bin, "operators", "revoke", "alice", "--state-dir", state).CombinedOutput(); err != nil {
		t.Fatalf("operators revoke: %v\n%s", err, out)
	}
	do(t, pages["alice"], chromedp.WaitVisible(chromedp.CSS("#status.stopped")))
	if badge, notice := text(t, pages["alice"], "#status"), text(t, pages["alice"], "#notice"); badge != "signed out" || !strings.Contains(notice, "access has ended") {
		t.Errorf("after the revocation alice's page says %q, %q", badge, notice)
	}
}

// TestInboxBehindASigningInProxy: behind a reverse proxy that signs
// operators in and names them in --operator-header, the inbox needs no
// token: a page whose requests carry the header (as the proxy's would)
// is the operator it names; one without it, and without a token, says
// how to open the inbox.
func TestInboxBehindASigningInProxy(t *testing.T) {
	t.Parallel()
	bin := bridgeBinary(t)
	state := t.TempDir()
	addOperator(t, state, "dave@example.org", "--proxy")
	p := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off",
		"--operator-header", "X-Forwarded-User", "--trusted-proxy", "127.0.0.1", "--", bin, "demo-server")
	base := p.address(t, p.errb, "AEP endpoint on ")
	browser := newBrowser(t)
	do(t, browser, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#notice")))
	if badge := text(t, browser, "#status"); badge != "no token" {
		t.Errorf("a page without a token or the proxy's header says %q; want no token", badge)
	}
	tab, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	do(t, tab, chromedp.Navigate("about:blank"))
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-User": "dave@example.org"}}); err != nil {
		t.Fatal(err)
	}
	do(t, tab, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#status.up")))
	if who := text(t, tab, "#who"); who != "dave@example.org · answers every server" {
		t.Errorf("the page behind the proxy says it is %q", who)
	}
}

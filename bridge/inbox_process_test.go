package bridge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// The tests in this file run the inbox against the real binary: serve
// with MCP clients of its own, and the demo until it ends.

var bridgeBinOnce struct {
	sync.Once
	path string
	err  error
	out  []byte
}

// bridgeBinary builds cmd/aep-mcp-bridge once per test binary.
func bridgeBinary(t *testing.T) string {
	t.Helper()
	bridgeBinOnce.Do(func() {
		dir, err := testenv.TempRoot()
		if err != nil {
			bridgeBinOnce.err = err
			return
		}
		bridgeBinOnce.path = filepath.Join(dir, "aep-mcp-bridge")
		bridgeBinOnce.out, bridgeBinOnce.err = exec.Command("go", "build", "-o", bridgeBinOnce.path, "../cmd/aep-mcp-bridge").CombinedOutput()
	})
	if bridgeBinOnce.err != nil {
		t.Fatalf("building the bridge: %v\n%s", bridgeBinOnce.err, bridgeBinOnce.out)
	}
	return bridgeBinOnce.path
}

// process is the binary running with args, its output collected.
type process struct {
	cmd       *exec.Cmd
	out, errb *testenv.Buffer
	done      chan struct{}
	err       error
}

func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bridgeBinary(t), args...), out: &testenv.Buffer{}, errb: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	})
	return p
}

// address waits for the first http://host:port the output re prints.
func (p *process) address(t *testing.T, buf *testenv.Buffer, prefix string) string {
	t.Helper()
	buf.WaitFor(t, prefix, waitLimit)
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + `(http://127\.0\.0\.1:[0-9]+)`).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("no address after %q in:\n%s", prefix, buf.String())
	}
	return m[1]
}

// readToken reads a token file the bridge stored.
func readToken(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestInboxNamesEachCardsClientUnderServe: under serve, two MCP clients
// call the demo server's tool; each question's card names its server and
// the client whose session asked it, name and version.
func TestInboxNamesEachCardsClientUnderServe(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		ctx := newBrowser(t)
		state := t.TempDir()
		bin := bridgeBinary(t)
		p := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off",
			"--", bin, "demo-server")
		base := p.address(t, p.errb, "AEP endpoint on ")
		mcpURL := p.address(t, p.errb, "MCP gateway on ") + "/mcp"
		mcpToken := readToken(t, filepath.Join(state, "mcp-token"))
		clients := map[string]string{"ops-console": "4.2.0", "nightly-ci": "0.9.1"}
		cctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		results := make(chan error, len(clients))
		for name, version := range clients {
			c := gatewayClient(t, cctx, mcpURL, mcpToken, name, version)
			go func() {
				req := mcp.CallToolRequest{}
				req.Params.Name = "deploy"
				_, err := c.CallTool(cctx, req)
				results <- err
			}()
		}
		do(t, ctx, chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(base+"/#token="+readToken(t, filepath.Join(state, "token"))))
		// Both cards, each naming its client once its session is known.
		do(t, ctx, chromedp.Poll[chromedp.Void](`document.querySelectorAll("#pending .card .client").length === 2 &&
		  Array.from(document.querySelectorAll("#pending .card .client")).every(e => !e.textContent.endsWith("unknown"))`, chromedp.WithPollingMutation()))
		got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#pending .card")).map(c => c.querySelector("h3").textContent + " / " + c.querySelector(".client").textContent)`)
		sort.Strings(got)
		want := []string{"aep-mcp-bridge-demo / MCP client: nightly-ci 0.9.1", "aep-mcp-bridge-demo / MCP client: ops-console 4.2.0"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the cards name (-want +got):\n%s", diff)
		}
		for _, qid := range eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#pending .card")).map(c => c.dataset.qid)`) {
			card := `#pending .card[data-qid="` + qid + `"]`
			// The card an operator answered leaves; they click the next one
			// once it has.
			do(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(`#pending .card .ack:not(:empty)`)),
				chromedp.Click(chromedp.CSS(card+` .actions button:nth-of-type(2)`))) // Decline
			select {
			case err := <-results:
				if err != nil {
					t.Errorf("a client's call failed: %v", err)
				}
			case <-time.After(failGuard):
				t.Fatalf("no client's call ended within %v of a decline", failGuard)
			}
		}
	})
}

// gatewayClient is an MCP client of the gateway at mcpURL, initialized
// under name and version; it is closed when the test ends.
func gatewayClient(t *testing.T, ctx context.Context, mcpURL, token, name, version string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(mcpURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	t.Cleanup(func() { c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: version}
	ictx, cancel := context.WithTimeout(ctx, failGuard)
	defer cancel()
	if _, err := c.Initialize(ictx, init); err != nil {
		t.Fatalf("initialize as %s: %v", name, err)
	}
	return c
}

// TestInboxSaysTheBridgeStopped runs the demo, answers its question in the
// inbox, and lets the demo end: the badge says the bridge has stopped,
// instead of reconnecting forever.
func TestInboxSaysTheBridgeStopped(t *testing.T) {
	t.Parallel()
	onScreens(t, func(t *testing.T, v viewport) {
		ctx := newBrowser(t)
		state := t.TempDir()
		p := startProcess(t, "demo", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off")
		base := p.address(t, p.out, "Answer it in the inbox at ")
		do(t, ctx, chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(base+"/#token="+readToken(t, filepath.Join(state, "token"))),
			chromedp.WaitVisible(chromedp.CSS("#pending .card form")), chromedp.WaitVisible(chromedp.CSS("#status.up")))
		do(t, ctx, chromedp.Click(chromedp.CSS(`#pending .card .actions button:nth-of-type(2)`))) // Decline
		<-p.done
		if p.err != nil {
			t.Fatalf("the demo ended with %v:\n%s%s", p.err, p.out.String(), p.errb.String())
		}
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#status.stopped")))
		badge, notice := text(t, ctx, "#status"), text(t, ctx, "#notice")
		if badge != "bridge stopped" || !strings.Contains(notice, "has stopped") {
			t.Errorf("after the demo ended the badge says %q and the page %q", badge, notice)
		}
	})
}

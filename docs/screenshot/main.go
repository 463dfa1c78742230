// Command screenshot takes the README's picture of the operators' inbox
// from the real inbox in headless Chromium: it builds the bridge, runs it
// in front of its demo MCP server, lets the server ask its question twice,
// answers one from the CLI's client so the history has an entry, and
// screenshots the page.
//
// Run it from the repository's root after changing the inbox:
//
//	go run ./docs/screenshot
//
// It writes docs/inbox.png (desktop width) and docs/inbox-phone.png
// (390 px). -chromium names the browser (default /usr/bin/chromium).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

func main() {
	chromium := flag.String("chromium", "/usr/bin/chromium", "the Chromium to drive")
	out := flag.String("out", "docs", "the folder the pictures go to")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *chromium, *out); err != nil {
		fmt.Fprintln(os.Stderr, "screenshot:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, chromium, out string) error {
	tmp, err := os.MkdirTemp("", "aep-screenshot")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "aep-mcp-bridge")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/aep-mcp-bridge").CombinedOutput(); err != nil {
		return fmt.Errorf("building the bridge (run this from the repository's root): %v\n%s", err, b)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	token := hex.EncodeToString(raw)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h, err := bridge.NewHost(bridge.HostOptions{Listener: ln, Token: token, Root: inbox.Handler(), Instance: "screenshot"})
	if err != nil {
		return err
	}
	defer h.Close(context.Background())
	questions := h.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, 4)
	stop, err := askTwice(ctx, h, bin)
	if err != nil {
		return err
	}
	defer stop()
	var ids []string
	for len(ids) < 2 {
		select {
		case d := <-questions.C:
			ids = append(ids, d.Event.ID)
		case <-ctx.Done():
			return errors.New("the demo server did not ask its questions")
		}
	}
	if err := answerOne(ctx, "http://"+h.Addr(), token, ids[0]); err != nil {
		return err
	}
	url := "http://" + h.Addr() + "/#token=" + token
	if err := shoot(ctx, chromium, url, ids[1], 1000, filepath.Join(out, "inbox.png")); err != nil {
		return err
	}
	return shoot(ctx, chromium, url, ids[1], 390, filepath.Join(out, "inbox-phone.png"))
}

// askTwice runs a bridge session in front of the demo server and calls its
// deploy tool twice; stop ends the calls and the session.
func askTwice(ctx context.Context, h *bridge.Host, bin string) (stop func(), err error) {
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := h.NewSession(bridge.Options{Command: []string{bin, "demo-server"}, Name: "deploy-server", Client: c2bR, ClientOut: b2cW, Timeout: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.Run(runCtx); b2cW.Close(); close(done) }()
	mc := client.NewClient(transport.NewIO(b2cR, c2bW, nil), client.WithProtocolVersion("2025-11-25"))
	stop = func() { cancel(); mc.Close(); <-done }
	if err := mc.Start(runCtx); err != nil {
		stop()
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "screenshot", Version: "1.0.0"}
	if _, err := mc.Initialize(runCtx, init); err != nil {
		stop()
		return nil, err
	}
	for range 2 {
		req := mcp.CallToolRequest{}
		req.Params.Name = "deploy"
		go mc.CallTool(runCtx, req)
	}
	return stop, nil
}

// answerOne answers a question as `aep-mcp-bridge respond` does.
func answerOne(ctx context.Context, base, token, id string) error {
	c := &operator.Client{Endpoint: base, Token: token}
	qs, err := c.Pending(ctx)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.ID == id {
			_, err := c.Respond(ctx, q, aep.Answer{Values: map[string]any{"service": "search", "replicas": 4, "checks": []any{"smoke"}}}, 10*time.Second, nil)
			return err
		}
	}
	return fmt.Errorf("question %s is not pending", id)
}

// shoot opens the inbox at a width, starts filling the open question, and
// writes a full-page screenshot.
func shoot(ctx context.Context, chromium, url, open string, width int64, path string) error {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(int(width), 900))
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	card := `#pending article[data-qid="` + open + `"]`
	err := chromedp.Do(bctx,
		chromedp.EmulateViewport(width, 900),
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(card+" form")),
		chromedp.WaitVisible(chromedp.CSS("#history .outcome time")),
		chromedp.SendKeys(chromedp.CSS(card+" input[type=text]"), "checkout"),
	)
	if err != nil {
		return fmt.Errorf("driving the inbox: %w", err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}

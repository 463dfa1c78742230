// Command screenshot takes the pictures of the operators' inbox in docs/
// from the real inbox in headless Chromium: it builds the bridge, runs it in
// front of its demo MCP server, lets the server ask its question twice,
// answers one from the CLI's client so the history has an entry, and
// screenshots the page; then it asks a question whose pattern only the
// bridge can check (a Go regular expression JavaScript does not read),
// answers it wrong in the inbox, and screenshots the bridge's refusal at
// its field.
//
// Run it from the repository's root after changing the inbox:
//
//	go run ./docs/screenshot
//
// It writes docs/inbox.png (1280 px wide), docs/inbox-phone.png (390 px)
// and docs/inbox-refusal.png (the refused question's card).
// -chromium names the browser (default /usr/bin/chromium).
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
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
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
	peer := filepath.Join(tmp, "elicitserver")
	for out, pkg := range map[string]string{bin: "./cmd/aep-mcp-bridge", peer: "./internal/testpeers/elicitserver"} {
		if b, err := exec.CommandContext(ctx, "go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s (run this from the repository's root): %v\n%s", pkg, err, b)
		}
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
	deploy := mcp.CallToolRequest{}
	deploy.Params.Name = "deploy"
	stop, err := ask(ctx, h, []string{bin, "demo-server"}, "deploy-server", deploy, deploy)
	if err != nil {
		return err
	}
	defer stop()
	ids, err := next(ctx, questions, 2)
	if err != nil {
		return err
	}
	if err := answerOne(ctx, "http://"+h.Addr(), token, ids[0]); err != nil {
		return err
	}
	url := "http://" + h.Addr() + "/#token=" + token
	if err := shoot(ctx, chromium, url, ids[1], 1280, filepath.Join(out, "inbox.png")); err != nil {
		return err
	}
	if err := shoot(ctx, chromium, url, ids[1], 390, filepath.Join(out, "inbox-phone.png")); err != nil {
		return err
	}
	rota := mcp.CallToolRequest{}
	rota.Params.Name = "ask"
	rota.Params.Arguments = map[string]any{"message": "Name the on-call rota for the checkout service", "schema": rotaSchema}
	stopRota, err := ask(ctx, h, []string{peer}, "rota-server", rota)
	if err != nil {
		return err
	}
	defer stopRota()
	refused, err := next(ctx, questions, 1)
	if err != nil {
		return err
	}
	return shootRefusal(ctx, chromium, url, refused[0], filepath.Join(out, "inbox-refusal.png"))
}

// rotaSchema's pattern is RE2 syntax that JavaScript does not read, so
// only the bridge can check it.
const rotaSchema = `{"type":"object","properties":{
 "rota":{"type":"string","title":"Rota name","description":"Lower-case letters, digits and dashes","pattern":"(?i)^[a-z][a-z0-9-]*$"},
 "weeks":{"type":"integer","title":"Weeks per shift","minimum":1,"maximum":4,"default":1}},
 "required":["rota"]}`

// next waits for n questions and returns their ids.
func next(ctx context.Context, questions *bus.Subscription, n int) ([]string, error) {
	var ids []string
	for len(ids) < n {
		select {
		case d := <-questions.C:
			ids = append(ids, d.Event.ID)
		case <-ctx.Done():
			return nil, errors.New("the server did not ask its questions")
		}
	}
	return ids, nil
}

// ask runs a bridge session in front of the server command, named name,
// and makes each call; stop ends the calls and the session.
func ask(ctx context.Context, h *bridge.Host, command []string, name string, calls ...mcp.CallToolRequest) (stop func(), err error) {
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := h.NewSession(bridge.Options{Command: command, Name: name, Client: c2bR, ClientOut: b2cW, Timeout: 10 * time.Minute})
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
	init.Params.ClientInfo = mcp.Implementation{Name: "ci-agent", Version: "1.4.0"}
	if _, err := mc.Initialize(runCtx, init); err != nil {
		stop()
		return nil, err
	}
	for _, req := range calls {
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
			_, err := c.Respond(ctx, q, aep.Answer{Values: map[string]any{"service": "search", "replicas": 4, "canary": false,
				"region": "eu-west", "checks": []any{"smoke", "load"}, "contact": "oncall@example.com"}}, 10*time.Second, nil)
			return err
		}
	}
	return fmt.Errorf("question %s is not pending", id)
}

// browser starts a headless Chromium with a window of the given width.
func browser(ctx context.Context, chromium string, width int64) (context.Context, func()) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(int(width), 900))
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	return bctx, func() { cancelB(); cancelA() }
}

// shoot opens the inbox at a width, starts filling the open question, and
// writes a full-page screenshot.
func shoot(ctx context.Context, chromium, url, open string, width int64, path string) error {
	bctx, cancel := browser(ctx, chromium, width)
	defer cancel()
	card := `#pending article[data-qid="` + open + `"]`
	err := chromedp.Do(bctx,
		chromedp.EmulateViewport(width, 900),
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(card+" form")),
		chromedp.WaitVisible(chromedp.CSS("#history .outcome time")),
		chromedp.WaitVisible(chromedp.CSS("#status.up")),
		chromedp.SendKeys(chromedp.CSS(card+" input[type=text]"), "checkout"),
	)
	if err != nil {
		return fmt.Errorf("driving the inbox: %w", err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	return write(path, png)
}

// shootRefusal answers the question in the inbox with a name the bridge
// refuses, and writes a screenshot of its card with the refusal at the
// field.
func shootRefusal(ctx context.Context, chromium, url, open, path string) error {
	bctx, cancel := browser(ctx, chromium, 1280)
	defer cancel()
	card := `#pending article[data-qid="` + open + `"]`
	err := chromedp.Do(bctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(card+" form")),
		chromedp.WaitVisible(chromedp.CSS("#status.up")),
		chromedp.SendKeys(chromedp.CSS(card+" input[type=text]"), "on call"),
		chromedp.Click(chromedp.CSS(card+" button.primary")),
		chromedp.WaitVisible(chromedp.CSS(card+" .field.invalid")),
	)
	if err != nil {
		return fmt.Errorf("driving the inbox: %w", err)
	}
	png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS(card)))
	if err != nil {
		return err
	}
	return write(path, png)
}

func write(path string, png []byte) error {
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}

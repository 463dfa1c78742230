package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/term"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
)

// demoSchema covers every field type, with one required field first and
// the constraints and defaults operators are shown. It is sent as written
// (json.RawMessage), so its properties keep their declared order.
const demoSchema = `{"type":"object","properties":{
 "service":{"type":"string","title":"Service name","description":"The service to deploy, as named in the service catalog","minLength":2,"maxLength":40,"pattern":"^[a-z][a-z0-9-]*$"},
 "replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":10,"default":2},
 "canary":{"type":"boolean","title":"Start with a canary","default":true},
 "region":{"type":"string","title":"Region","oneOf":[{"const":"eu-west","title":"Europe (west)"},{"const":"us-east","title":"US (east)"}]},
 "checks":{"type":"array","title":"Checks to run","items":{"anyOf":[{"const":"smoke","title":"Smoke tests"},{"const":"load","title":"Load test"},{"const":"security","title":"Security scan"}]},"maxItems":2},
 "contact":{"type":"string","title":"On-call email","description":"Who is paged if the rollout fails","format":"email"}},
 "required":["service"]}`

// runDemoServer is the built-in demo MCP server (hidden subcommand): its
// deploy tool asks for a deployment plan and returns the ElicitResult.
func runDemoServer(_ context.Context, args []string, s stdio) error {
	fs := newFlagSet("demo-server", "demo-server", "The demo's MCP server on stdio (aep-mcp-bridge demo starts it).")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	return serveDemo()
}

// serveDemo serves the demo's MCP server on the process's stdio.
func serveDemo() error {
	s := server.NewMCPServer("aep-mcp-bridge-demo", "1.0.0",
		server.WithElicitation(),
		//lint:ignore SA1019 the demo shows the 2025 flow, where the server sends elicitation/create; its client pins 2025-11-25
		server.WithLegacyServerInitiatedRequests(),
		server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("deploy", mcp.WithDescription("Deploy a service after a human fills in the plan")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
				Message: "Plan the deployment of the checkout service", RequestedSchema: json.RawMessage(demoSchema)}})
			if err != nil {
				return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
			}
			b, _ := json.Marshal(res)
			return mcp.NewToolResultText(string(b)), nil
		})
	return server.ServeStdio(s)
}

// demoConfig is the demo's command line.
type demoConfig struct {
	timeout                      time.Duration
	listen, token, state, logDir string
	insecureToken                bool
	notify                       notifyFlags
}

func parseDemoFlags(args []string, s stdio) (demoConfig, error) {
	var c demoConfig
	fs := newFlagSet("demo", "demo [--timeout D] [--listen ADDR]",
		"Runs the whole loop in one command: a built-in MCP server asks a question through the bridge,\n"+
			"and you answer it in the inbox or with respond from another terminal; it prints the commands.\n"+
			"Exit status: 0 once the question ended (answered, declined, cancelled or timed out) or on Ctrl-C,\n"+
			"2 a command-line error, 1 any other error.")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "how long the question waits; unanswered, the server gets cancel")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8787", "the endpoint address; a busy port falls back to a free one")
	fs.StringVar(&c.token, "token", "", "bearer token (default: AEP_TOKEN, else the stored one)")
	fs.StringVar(&c.state, "state-dir", "", "where the token and the named operators are stored")
	fs.StringVar(&c.logDir, "log-dir", "~/.aep/logs", "JSONL session logs; off disables them")
	fs.BoolVar(&c.insecureToken, "insecure-token", false, "accept a --token or AEP_TOKEN shorter than 32 characters")
	c.notify.define(fs)
	if err := parseArgs(fs, args, s); err != nil {
		return demoConfig{}, err
	}
	switch {
	case fs.NArg() != 0:
		return demoConfig{}, noArguments(fs, s)
	case c.timeout <= 0:
		fmt.Fprintln(s.err, "aep-mcp-bridge demo: --timeout must be positive")
		return demoConfig{}, errUsage
	}
	return c, nil
}

// runDemo is `aep-mcp-bridge demo`: the whole loop in one command.
func runDemo(ctx context.Context, args []string, s stdio) error {
	stdout, stderr := s.out, s.err
	c, err := parseDemoFlags(args, s)
	if err != nil {
		return err
	}
	dir, err := stateDir(c.state)
	if err != nil {
		return err
	}
	token, where, err := loadToken(c.token, dir, c.insecureToken)
	if err != nil {
		return err
	}
	logDir, err := expandHome(c.logDir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program to start the demo server: %w", err)
	}
	ln, err := net.Listen("tcp", c.listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		fmt.Fprintf(stderr, "aep-mcp-bridge demo: %s is busy; using a free port\n", c.listen)
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return fmt.Errorf("listening for the demo's endpoint: %w", err)
	}
	warnLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	no, err := c.notify.options(c.state, redactOptions(""), warnLog)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "aep-mcp-bridge demo:", err)
		return errUsage
	}
	// The endpoint serves from the state folder: its named operators
	// reach it, as they reach run's and serve's.
	h, err := bridge.NewHost(bridge.HostOptions{Listener: ln, Token: token, Root: inbox.Handler(), Instance: "demo", Notify: no,
		Identities: store.Path(dir), Logger: warnLog})
	if err != nil {
		ln.Close()
		return err
	}
	defer h.Close(context.Background())
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := h.NewSession(bridge.Options{Command: []string{self, "demo-server"}, Client: c2bR, ClientOut: b2cW,
		ServerStderr: stderr, Timeout: c.timeout, LogDir: logDir})
	if err != nil {
		return err
	}
	d := &demo{cmd: selfCommand(self), base: "http://" + h.Addr(), token: token, timeout: c.timeout, stdout: stdout,
		flags: clientFlagsText(h.Addr(), where, c.state), tokenFlag: where == "--token", showToken: isTerminal(stdout)}
	events := h.Hub().Subscribe(func(ev *aep.Event) bool {
		switch ev.Type {
		case "attention.requested", "attention.answered", "attention.timeout":
			return true
		}
		return false
	}, 16)
	defer events.Close()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx); b2cW.Close() }()
	res, err := d.run(ctx, runCtx, transport.NewIO(b2cR, c2bW, nil), events)
	runErr := <-done
	if err != nil && ctx.Err() != nil {
		// Interrupted (Ctrl-C): the question is withdrawn with the
		// session; that is how a demo ends, not a failure.
		fmt.Fprintln(stdout, "The demo stopped before the question was answered.")
		return nil
	}
	if err != nil {
		return err
	}
	d.report(res, endingOf(events), b.LogPath())
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}

// demo is one run of the demo: an mcp-go client calls the deploy tool
// through the bridge, and the question it raises is printed with the ways
// to answer it.
type demo struct {
	// cmd is how the user runs this program (selfCommand); flags are
	// the operator flags that reach this demo's endpoint and token.
	cmd, flags  string
	base, token string
	tokenFlag   bool // the token came from --token: the commands need it too
	timeout     time.Duration
	stdout      io.Writer
	// showToken says the inbox link itself may be printed, because
	// stdout is a terminal and not a log file.
	showToken bool
}

// run calls the tool, prints the question when it is raised, and returns
// the tool's result once someone answered. It closes the client.
func (d *demo) run(ctx, runCtx context.Context, tr *transport.Stdio, events *bus.Subscription) (*mcp.CallToolResult, error) {
	mc := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	defer mc.Close()
	if err := mc.Start(runCtx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "aep-mcp-bridge-demo-client", Version: "1.0.0"}
	if _, err := mc.Initialize(runCtx, init); err != nil {
		return nil, fmt.Errorf("the demo client could not reach the demo server through the bridge: %w", err)
	}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	results := make(chan result, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "deploy"
		r, err := mc.CallTool(runCtx, req)
		results <- result{r, err}
	}()
	fmt.Fprintf(d.stdout, "The demo MCP server asked a question through the bridge (it waits %s).\n\n", d.timeout)
	for asked := false; !asked; {
		select {
		case e := <-events.C:
			if e.Event.Type == "attention.requested" {
				d.printQuestion(e.Event.ID)
				asked = true
			}
		case r := <-results:
			return nil, fmt.Errorf("the demo tool ended before asking: %v", r.err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case r := <-results:
		if r.err != nil {
			return nil, fmt.Errorf("the demo tool call failed: %w", r.err)
		}
		return r.res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// printQuestion says how to answer question id, with commands that run
// as printed.
func (d *demo) printQuestion(id string) {
	if d.showToken {
		fmt.Fprintf(d.stdout, "Answer it in the inbox:\n  %s/#token=%s\n\n", d.base, d.token)
	} else {
		fmt.Fprintf(d.stdout, "Answer it in the inbox at %s/ (for the link with the token, run: %s inbox%s)\n\n", d.base, d.cmd, d.flags)
	}
	respond := d.cmd + " respond " + id
	fmt.Fprintf(d.stdout, "or from another terminal, with one of:\n")
	fmt.Fprintf(d.stdout, "  %s --values '{\"service\":\"checkout\",\"replicas\":3,\"canary\":true,\"region\":\"eu-west\",\"checks\":[\"smoke\",\"load\"]}'%s\n", respond, d.flags)
	fmt.Fprintf(d.stdout, "  %s%s\n", respond, d.flags)
	fmt.Fprintf(d.stdout, "  %s --decline%s\n", respond, d.flags)
	fmt.Fprintln(d.stdout, "(the first answers with values, the second asks field by field, the third declines)")
	if d.tokenFlag {
		fmt.Fprintln(d.stdout, "(these commands need the token you gave with --token: set AEP_TOKEN to it first)")
	}
	fmt.Fprintln(d.stdout)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ending is how the question ended, as the bus recorded it.
type ending struct {
	timedOut bool
	option   string // an operator's option: decline, cancel, accept
	by       string // who answered
}

// endingOf reads the events recorded since the question was asked. The
// bridge publishes attention.answered or attention.timeout before the
// server gets its result, so by the time the demo has the tool's result
// they wait in the subscription's queue.
func endingOf(events *bus.Subscription) ending {
	var e ending
	for {
		select {
		case d := <-events.C:
			switch d.Event.Type {
			case "attention.timeout":
				e.timedOut = true
			case "attention.answered":
				var a aep.AttentionAnswered
				if json.Unmarshal(d.Event.Data, &a) == nil {
					e.option, e.by = a.Answer.Option, a.By
					if e.option == "" && a.Answer.Values == nil {
						e.option = strings.ToLower(strings.TrimSpace(a.Answer.Text))
					}
				}
			}
		default:
			return e
		}
	}
}

// report prints the ElicitResult the server received, and why.
func (d *demo) report(res *mcp.CallToolResult, how ending, logPath string) {
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	fmt.Fprintf(d.stdout, "The server received this ElicitResult:\n  %s\n", strings.TrimSpace(text))
	who := "An operator"
	if how.by != "" {
		who += " (" + oneLine(how.by, 60) + ")"
	}
	switch {
	case how.timedOut:
		fmt.Fprintf(d.stdout, "\nNobody answered within %s, so the server got cancel.\n", d.timeout)
	case how.option == "cancel":
		fmt.Fprintf(d.stdout, "\n%s cancelled the question, so the server got cancel.\n", who)
	case how.option == "decline":
		fmt.Fprintf(d.stdout, "\n%s declined, so the server got decline.\n", who)
	}
	if logPath != "" {
		fmt.Fprintf(d.stdout, "\nThe session's events are in %s\n", logPath)
	}
}

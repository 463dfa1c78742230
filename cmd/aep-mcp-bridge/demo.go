package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
)

// demoSchema covers every field type, with one required field.
const demoSchema = `{"type":"object","properties":{
 "service":{"type":"string","title":"Service name","minLength":2},
 "replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":10,"default":2},
 "canary":{"type":"boolean","title":"Start with a canary","default":true},
 "region":{"type":"string","title":"Region","oneOf":[{"const":"eu-west","title":"Europe (west)"},{"const":"us-east","title":"US (east)"}]},
 "checks":{"type":"array","title":"Checks to run","items":{"anyOf":[{"const":"smoke","title":"Smoke tests"},{"const":"load","title":"Load test"},{"const":"security","title":"Security scan"}]}},
 "contact":{"type":"string","title":"On-call email","format":"email"}},
 "required":["service"]}`

// runDemoServer is the built-in demo MCP server (hidden subcommand): its
// deploy tool asks for a deployment plan and returns the ElicitResult.
func runDemoServer() error {
	s := server.NewMCPServer("aep-mcp-bridge-demo", "1.0.0",
		server.WithElicitation(), server.WithLegacyServerInitiatedRequests(), server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("deploy", mcp.WithDescription("Deploy a service after a human fills in the plan")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var schema map[string]any
			json.Unmarshal([]byte(demoSchema), &schema)
			res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
				Message: "Plan the deployment of the checkout service", RequestedSchema: schema}})
			if err != nil {
				return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
			}
			b, _ := json.Marshal(res)
			return mcp.NewToolResultText(string(b)), nil
		})
	return server.ServeStdio(s)
}

// runDemo is `aep-mcp-bridge demo`: the whole loop in one command.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 10*time.Minute, "how long the question waits; unanswered, the server gets cancel")
	listen := fs.String("listen", "127.0.0.1:8787", "the endpoint address; a busy port falls back to a free one")
	tokenFlag := fs.String("token", "", "bearer token (default: AEP_TOKEN, else the stored one)")
	state := fs.String("state-dir", "", "where the token is stored")
	logDirFlag := fs.String("log-dir", "~/.aep/logs", "JSONL session logs; off disables them")
	if fs.Parse(args) != nil || fs.NArg() != 0 || *timeout <= 0 {
		return errUsage
	}
	dir, err := stateDir(*state)
	if err != nil {
		return err
	}
	token, _, err := loadToken(*tokenFlag, dir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		fmt.Fprintf(stderr, "aep-mcp-bridge demo: %s is busy; using a free port\n", *listen)
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return fmt.Errorf("listening for the demo's endpoint: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		ln.Close()
		return fmt.Errorf("finding this program to start the demo server: %w", err)
	}
	logDir, err := expandHome(*logDirFlag)
	if err != nil {
		ln.Close()
		return err
	}
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := bridge.New(bridge.Options{Command: []string{self, "demo-server"}, Client: c2bR, ClientOut: b2cW,
		ServerStderr: stderr, Timeout: *timeout, LogDir: logDir})
	if err != nil {
		ln.Close()
		return err
	}
	ep, err := bus.NewEndpoint(bus.EndpointOptions{Token: token, Hub: b.Hub(), Root: inbox.Handler(),
		Health: func() map[string]any { return map[string]any{"relay": "off", "upstream": b.Upstream()} }})
	if err != nil {
		ln.Close()
		return err
	}
	ep.AddClaim(b.Claim("demo"))
	stopEndpoint := serveEndpoint(ln, ep, token, "the state folder", io.Discard)
	defer stopEndpoint()
	base := "http://" + ln.Addr().String()

	questions := b.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, 4)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx); b2cW.Close() }()
	mc := client.NewClient(transport.NewIO(b2cR, c2bW, nil), client.WithProtocolVersion("2025-11-25"))
	if err := mc.Start(runCtx); err != nil {
		return err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "aep-mcp-bridge-demo-client", Version: "1.0.0"}
	if _, err := mc.Initialize(runCtx, init); err != nil {
		return fmt.Errorf("the demo client could not reach the demo server through the bridge: %w", err)
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
	fmt.Fprintf(stdout, "The demo MCP server asked a question through the bridge (it waits %s).\n\n", *timeout)
	select {
	case d := <-questions.C:
		cmdName := "aep-mcp-bridge"
		if strings.Contains(self, "go-build") { // started with go run
			cmdName = "go run ./cmd/aep-mcp-bridge"
		}
		endpointFlag := ""
		if ln.Addr().String() != "127.0.0.1:8787" {
			endpointFlag = " --endpoint " + base
		}
		fmt.Fprintf(stdout, "Answer it in the inbox:\n  %s/#token=%s\n\n", base, token)
		fmt.Fprintf(stdout, "or from another terminal:\n  %s respond %s --values '{\"service\":\"checkout\",\"replicas\":3,\"canary\":true,\"region\":\"eu-west\",\"checks\":[\"smoke\",\"load\"]}'%s\n\n", cmdName, d.Event.ID, endpointFlag)
		fmt.Fprintf(stdout, "(or: %s respond %s --decline%s)\n\n", cmdName, d.Event.ID, endpointFlag)
	case r := <-results:
		return fmt.Errorf("the demo tool ended before asking: %v", r.err)
	case <-ctx.Done():
		return ctx.Err()
	}
	var r result
	select {
	case r = <-results:
	case <-ctx.Done():
		return ctx.Err()
	}
	mc.Close()
	runErr := <-done
	if r.err != nil {
		return fmt.Errorf("the demo tool call failed: %w", r.err)
	}
	text := ""
	if len(r.res.Content) > 0 {
		if tc, ok := r.res.Content[0].(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	fmt.Fprintf(stdout, "The server received this ElicitResult:\n  %s\n", strings.TrimSpace(text))
	if strings.Contains(text, `"action":"cancel"`) {
		fmt.Fprintln(stdout, "\nNobody answered in time, so the server got cancel.")
	}
	if p := b.LogPath(); p != "" {
		fmt.Fprintf(stdout, "\nThe session's events are in %s\n", p)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}

// Command gosdkpeer is an MCP server built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), used by the bridge's tests as
// a real upstream peer that nobody here wrote: over stdio, or over
// streamable HTTP, stateful or stateless.
//
// Usage:
//
//	gosdkpeer                        serve over stdio
//	gosdkpeer -http 127.0.0.1:0      serve streamable HTTP (stateful)
//	gosdkpeer -http ... -stateless   serve streamable HTTP, stateless
//
// Over HTTP it prints "listening on http://HOST:PORT/mcp" on stderr once
// it accepts connections. Over stdio, with AEP_TEST_RECORD set, it appends
// every byte it reads to that file.
//
// Its tool region {region} returns its argument, which its inputSchema
// binds to the Mcp-Param-Region header (x-mcp-header). Its tool add-tool
// {name} adds a tool of that name, so that the server
// tells its listening clients that the tool list changed. Its tool ask
// {schema?, message?} asks for input the way the SDK
// does in every revision: it returns an input request (MCP 2026-07-28
// multi round-trip), which the SDK turns into an elicitation/create for a
// client of an earlier revision, and once answered returns the
// ElicitResult it received as JSON text. A stateless server cannot send
// an earlier client a request, so that one call fails.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testpeers/record"
)

// defaultSchema is asked for when the call names none.
const defaultSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Name","minLength":2},"n":{"type":"integer","title":"Count","minimum":1,"maximum":10}},"required":["name","n"]}`

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	stateless := flag.Bool("stateless", false, "with -http: a stateless server (MCP 2026-07-28 requires it)")
	flag.Parse()
	if err := run(*addr, *stateless); err != nil {
		fmt.Fprintln(os.Stderr, "gosdkpeer:", err)
		os.Exit(1)
	}
}

func run(addr string, stateless bool) error {
	if addr == "" {
		if err := record.Stdin(); err != nil {
			return err
		}
		return newServer().Run(context.Background(), &mcp.StdioTransport{})
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer() }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, mux)
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdk-peer", Version: "1.8.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask", Description: "asks for input and returns the ElicitResult it received",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"schema":{"type":"string"},"message":{"type":"string"}}}`)}, ask)
	s.AddTool(&mcp.Tool{Name: "add-tool", Description: "adds a tool named name, so that the tool list changes",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}, addTool(s))
	s.AddTool(&mcp.Tool{Name: "region", Description: "returns its region argument, which clients mirror in the Mcp-Param-Region header",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Region string `json:"region"`
			}
			json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Region}}}, nil
		})
	return s
}

// addTool adds the tool its call names, which does nothing: the server
// tells the clients that listen for it that its tool list changed.
func addTool(s *mcp.Server) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Name == "" {
			return nil, errors.New("add-tool needs the name of the tool to add")
		}
		s.AddTool(&mcp.Tool{Name: args.Name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + args.Name}}}, nil
	}
}

func ask(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Schema  string `json:"schema"`
		Message string `json:"message"`
	}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
	}
	if args.Schema == "" {
		args.Schema = defaultSchema
	}
	if args.Message == "" {
		args.Message = "Who is deploying, and how many replicas?"
	}
	if r, ok := req.Params.InputResponses["answer"]; ok {
		er, ok := r.(*mcp.ElicitResult)
		if !ok {
			return nil, errors.New("the answer is not an ElicitResult")
		}
		b, err := json.Marshal(er)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"answer": &mcp.ElicitParams{Message: args.Message, RequestedSchema: json.RawMessage(args.Schema)}},
		RequestState:  "ask-1",
	}, nil
}

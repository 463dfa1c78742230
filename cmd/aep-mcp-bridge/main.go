// Command aep-mcp-bridge fronts an MCP server and lets remote humans answer
// the questions it asks: every elicitation/create becomes an AEP attention
// request, and the answer goes back to the server as an ElicitResult.
//
// Usage:
//
//	aep-mcp-bridge [flags] -- COMMAND [ARGS...]
//	aep-mcp-bridge serve [flags] (-- COMMAND [ARGS...] | --url URL)
//
// The bridge spawns COMMAND as the upstream MCP server over stdio and serves
// the MCP client on its own stdin and stdout. Logs go to stderr. serve
// (package gateway) serves MCP clients over HTTP instead, each client
// session with an upstream of its own.
//
// The same binary is the operators' command line (inbox, pending, respond,
// tail), rewrites MCP client configs to run every server through it (wrap,
// unwrap), and runs a demo (demo). See the README for each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "aep-mcp-bridge:", err)
		}
		os.Exit(exitCode(err))
	}
}

// pollable returns r, or for the process's stdin a pollable copy, so
// closing it at shutdown unblocks the goroutine reading it. Only the proxy
// uses it: the O_NONBLOCK flag is shared with every reader of the fd.
func pollable(r io.Reader) io.Reader {
	if r != io.Reader(os.Stdin) {
		return r
	}
	fd := int(os.Stdin.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return os.Stdin
	}
	return os.NewFile(uintptr(fd), "/dev/stdin")
}

// Command aep-mcp-bridge fronts an MCP server and lets remote humans answer
// the questions it asks: every elicitation/create becomes an AEP attention
// request, and the answer goes back to the server as an ElicitResult.
//
// Usage:
//
//	aep-mcp-bridge [flags] -- COMMAND [ARGS...]
//	aep-mcp-bridge serve [flags] (-- COMMAND [ARGS...] | --url URL)
//	aep-mcp-bridge SUBCOMMAND [flags] [ARGS...]   (aep-mcp-bridge help lists them)
//
// The bridge spawns COMMAND as the upstream MCP server over stdio and serves
// the MCP client on its own stdin and stdout. Logs go to stderr. serve
// (package gateway) serves MCP clients over HTTP instead, each client
// session with an upstream of its own.
//
// The same binary is the operators' command line (inbox, pending, respond,
// tail), rewrites MCP client configs to run every server through it (wrap,
// unwrap), and runs a demo (demo). The subcommands are one table
// (commands.go); a word that is neither a subcommand nor after -- is a
// usage error before anything starts. See the README for each.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/scrub"
)

func main() {
	// The secrets' values leave /proc/self/environ and /proc/self/cmdline
	// before anything else runs; the program still reads them. The
	// variables that flags and a notify file name are hidden once read
	// (hideSecretEnv).
	if err := scrub.Hide(scrub.Credentials(), secretFlags); err != nil {
		fmt.Fprintln(os.Stderr, "aep-mcp-bridge: warning:", err)
	}
	os.Exit(mainCode(os.Args[1:]))
}

// secretFlags are the flags whose values may be secrets: the tokens, a
// header for a remote server (Authorization) and a webhook URL (a chat
// webhook's URL carries its token).
var secretFlags = []string{"token", "mcp-token", "header", "notify", "notify-escalate-to"}

// hideSecretEnv hides the values of the environment variables names, read
// for a secret, and keeps them from every process the bridge spawns
// (scrub.Hide); the program still reads them. Hiding is best effort: a
// failure is a warning.
func hideSecretEnv(names []string, logger *slog.Logger) {
	if err := scrub.Hide(names, nil); err != nil {
		logger.Warn("the environment variables holding secrets stay readable in /proc", "err", err)
	}
}

// mainCode runs the command line args on the process's stdio and returns
// the exit status. SIGINT, SIGTERM and SIGHUP (the terminal went away)
// end the bridge in its shutdown order, which leaves stdin as it found it;
// with --policy, SIGHUP reloads the policy file instead.
func mainCode(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, hungUp := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if f := hangup.Load(); f != nil {
					(*f)() // a policy file is in force: reload it
				} else {
					hungUp()
				}
			case <-done:
				return
			}
		}
	}()
	err := run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(hup)
	close(done)
	hungUp()
	stop()
	if err != nil && !errors.Is(err, errUsage) && !errors.Is(err, errHelp) {
		fmt.Fprintln(os.Stderr, "aep-mcp-bridge:", err)
	}
	return exitCode(err)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/scrub"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/weburl"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// runInbox is `aep-mcp-bridge inbox`: it prints the ready-to-open inbox
// link, token included, and opens it in a browser when a desktop is
// there. The token is never put on a command line (other users can read
// those in the process list) nor in a file: the browser gets it once from
// a loopback address (handoff).
func runInbox(ctx context.Context, args []string, s stdio) error {
	stdout, stderr := s.out, s.err
	fs := newFlagSet("inbox", "inbox [--no-open] [--endpoint URL] [--token T] [--state-dir DIR]",
		"Prints the operator inbox's link, with the token, once the endpoint has proved it knows the token,\n"+
			"and opens it in a browser when there is a desktop.\n"+operatorExits)
	ca := clientFlags(fs)
	noOpen := fs.Bool("no-open", false, "print the link only; do not open a browser")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return noArguments(fs, s)
	}
	base, err := url.Parse(strings.TrimRight(ca.endpoint, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		fmt.Fprintf(stderr, "aep-mcp-bridge inbox: --endpoint %s: want the endpoint's http(s) base URL, e.g. %s\n", weburl.Display(ca.endpoint), defaultEndpoint)
		return errUsage
	}
	t, err := clientToken(ca.token, ca.state)
	if err != nil {
		return err
	}
	if err := checkEndpoint(ctx, base.String(), t, ca.allowPlain); err != nil {
		return err
	}
	link := base.String() + "/#token=" + url.QueryEscape(t)
	fmt.Fprintln(stdout, link)
	if *noOpen {
		return nil
	}
	opener := desktopOpener()
	if opener == nil {
		fmt.Fprintln(stderr, "aep-mcp-bridge inbox: no desktop to open a browser on; open the link above yourself")
		return nil
	}
	dir, err := stateDir(ca.state)
	if err != nil {
		return err
	}
	h, err := startHandoff(dir, link)
	if err != nil {
		return err
	}
	defer h.close()
	cmd := opener(h.page)
	// The browser it starts runs on; it gets none of the secrets' variables.
	cmd.Env = scrub.ChildEnv(nil)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "aep-mcp-bridge inbox: starting %s: %v; open the link above yourself\n", cmd.Path, err)
		return nil
	}
	// The opener hands the page on and may run as long as the browser
	// does: leave it running.
	cmd.Process.Release()
	fmt.Fprintf(stderr, "aep-mcp-bridge inbox: opening it in the browser (through %s); waiting for the browser to load it\n", h.page)
	if !h.wait(ctx) {
		fmt.Fprintf(stderr, "aep-mcp-bridge inbox: the browser did not load the launcher within %v; it is removed: open the link above yourself\n", handoffWait)
		return nil
	}
	fmt.Fprintln(stderr, "aep-mcp-bridge inbox: opened in the browser; the launcher is removed")
	return nil
}

// checkEndpoint makes sure a bridge serves base and knows the token, so
// the printed link works: the endpoint proves it knows the token before
// the token is used (operator.Client.Check), so a process holding the
// port learns nothing.
func checkEndpoint(ctx context.Context, base, token string, plain bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := (&operator.Client{Endpoint: base, Token: token, PlainRemote: plain}).Check(ctx)
	if errors.Is(err, operator.ErrUnreachable) {
		return &exitError{exitUnreachable, fmt.Sprintf("no bridge answers at %s yet. A bridge runs while the MCP server it fronts runs: "+
			"after aep-mcp-bridge wrap, it starts when your MCP client starts that server (start or restart the client, or reload its servers), "+
			"and the inbox is there from then on. To see one now, run aep-mcp-bridge demo; for a bridge elsewhere, pass --endpoint", base)}
	}
	return err
}

// desktopOpener returns how to open a file in the desktop's browser, or
// nil when there is no desktop.
func desktopOpener() func(path string) *exec.Cmd {
	switch runtime.GOOS {
	case "darwin":
		return func(p string) *exec.Cmd { return exec.Command("open", p) }
	case "windows":
		return func(p string) *exec.Cmd { return exec.Command("rundll32", "url.dll,FileProtocolHandler", p) }
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return nil
	}
	xdg, err := exec.LookPath("xdg-open")
	if err != nil {
		return nil
	}
	return func(p string) *exec.Cmd { return exec.Command(xdg, p) }
}

// inboxCommand is the command line that prints the inbox link of the
// endpoint at addr, for the token from where.
func inboxCommand(addr, where, stateFlag string) string {
	return "aep-mcp-bridge inbox" + clientFlagsText(addr, where, stateFlag)
}

// clientFlagsText is the operator flags (with a leading space) that
// reach the endpoint at addr with the token from where: --endpoint unless
// it is the default, --state-dir when the token is the one stored there.
// The token itself is never printed.
func clientFlagsText(addr, where, stateFlag string) string {
	flags := ""
	if "http://"+addr != defaultEndpoint {
		flags += " --endpoint http://" + addr
	}
	if stateFlag != "" && where != "--token" && where != "AEP_TOKEN" {
		flags += " --state-dir " + shellQuote(stateFlag)
	}
	return flags
}

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"
)

// stdio is a command's standard streams.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand: the word after the binary's name, and what
// runs with the arguments after it. Each one parses its flags with
// newFlagSet and parseArgs, so `NAME --help` prints its usage, generated
// from its flag set, to stdout.
type command struct {
	name    string
	summary string // one line for `aep-mcp-bridge help`
	hidden  bool   // left out of help (demo-server, which the demo spawns)
	run     func(ctx context.Context, args []string, s stdio) error
}

// commands is every subcommand, in the order help lists them. A new
// subcommand is a line here. Anything else on the command line is the
// bridge's own flags, then -- and the upstream server's command.
func commands() []command {
	return []command{
		{name: "serve", summary: "serve MCP clients over HTTP, each session with an upstream of its own", run: runServe},
		{name: "demo", summary: "see the whole loop: a built-in server asks, you answer", run: runDemo},
		{name: "inbox", summary: "print the operator inbox's link (with the token) and open it", run: runInbox},
		{name: "pending", summary: "list the open questions and permission requests", run: runPending},
		{name: "respond", summary: "answer a question (field by field, or with --values, --decline, …)", run: runRespond},
		{name: "approve", summary: "approve a tool call an approval policy holds (a permission request)", run: runApprove},
		{name: "deny", summary: "deny a held tool call, with a reason the model reads", run: runDeny},
		{name: "tail", summary: "print events as they happen", run: runTail},
		{name: "operators", summary: "add, list or revoke named operators (their rights, servers and credentials)", run: runOperators},
		{name: "clients", summary: "add, list or revoke named clients of the gateway (serve), each with its own credential", run: runClients},
		{name: "wrap", summary: "run every server of an MCP client's config through the bridge", run: runWrap},
		{name: "unwrap", summary: "undo wrap", run: runUnwrap},
		{name: "answers-from", summary: "write an --answers file from recorded session logs", run: runAnswersFrom},
		{name: "help", summary: "show this help, or a subcommand's", run: runHelp},
		{name: "version", summary: "print the version", run: runVersion},
		{name: "demo-server", hidden: true, run: runDemoServer},
	}
}

// lookupCommand returns the subcommand name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// errHelp ends a command that printed the help asked for: exit status 0.
var errHelp = errors.New("help printed")

// newFlagSet returns the flag set of the subcommand name. Its usage is
// "usage: aep-mcp-bridge SYNOPSIS", then about (if any), then the flags.
func newFlagSet(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: aep-mcp-bridge %s\n", synopsis)
		if about != "" {
			fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(about))
		}
		printFlags(fs)
	}
	return fs
}

// printFlags prints a flag set's flags under "Flags:", or says there are
// none.
func printFlags(fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		fmt.Fprintln(fs.Output(), "\nThis command takes no flags.")
		return
	}
	fmt.Fprintln(fs.Output(), "\nFlags:")
	fs.PrintDefaults()
}

// parseArgs parses args with fs. -h or --help prints the usage to stdout
// and returns errHelp; a bad flag prints the error and the usage to stderr
// and returns errUsage. Later messages of the command go to stderr.
func parseArgs(fs *flag.FlagSet, args []string, s stdio) error {
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(s.err)
	switch {
	case errors.Is(err, flag.ErrHelp):
		s.out.Write(buf.Bytes())
		return errHelp
	case err != nil:
		s.err.Write(buf.Bytes())
		return errUsage
	}
	return nil
}

// runHelp is `aep-mcp-bridge help [SUBCOMMAND]`.
func runHelp(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("help", "help [SUBCOMMAND]", "Shows the bridge's usage, or a subcommand's (the same as SUBCOMMAND --help).")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		top := topFlagSet(&config{})
		top.SetOutput(s.out)
		top.Usage()
		return nil
	case 1:
		if c, ok := lookupCommand(fs.Arg(0)); ok {
			return c.run(ctx, []string{"--help"}, s)
		}
		fmt.Fprintf(s.err, "aep-mcp-bridge help: %q is not a subcommand; the subcommands are %s\n", fs.Arg(0), commandNames())
		return errUsage
	}
	fmt.Fprintln(s.err, "aep-mcp-bridge help: give at most one subcommand")
	return errUsage
}

// commandNames lists the subcommands help shows, comma-separated.
func commandNames() string {
	var names []string
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, ", ")
}

// writeCommandList prints the subcommands and their summaries.
func writeCommandList(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
		}
	}
	tw.Flush()
}

// notACommand is the usage error for a word that is neither a subcommand
// nor after --: it says what the word could have meant, and nothing has
// been started or written.
func notACommand(stderr io.Writer, word string) error {
	fmt.Fprintf(stderr, "aep-mcp-bridge: %q is not a subcommand; the subcommands are %s.\n", word, commandNames())
	if near := nearestCommand(word); near != "" {
		fmt.Fprintf(stderr, "Did you mean: aep-mcp-bridge %s?\n", near)
	}
	fmt.Fprintf(stderr, "To run an MCP server through the bridge, put its command after --, e.g.: aep-mcp-bridge -- %s …\n", shellQuote(word))
	fmt.Fprintln(stderr, "Run aep-mcp-bridge help for more.")
	return errUsage
}

// nearestCommand returns the subcommand within two edits of word, if
// there is exactly one closest.
func nearestCommand(word string) string {
	best, bestD, tie := "", 3, false
	for _, c := range commands() {
		if c.hidden {
			continue
		}
		switch d := editDistance(strings.ToLower(word), c.name); {
		case d < bestD:
			best, bestD, tie = c.name, d, false
		case d == bestD:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// runVersion is `aep-mcp-bridge version` (and --version).
func runVersion(_ context.Context, args []string, s stdio) error {
	fs := newFlagSet("version", "version", "Prints the version, the commit it was built from and the Go version.")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.SetOutput(s.err)
		fs.Usage()
		return errUsage
	}
	fmt.Fprintln(s.out, versionLine())
	return nil
}

// versionLine is "aep-mcp-bridge VERSION (commit C[, modified]) GOVERSION",
// from the build information: VERSION is the module's version for `go
// install …@vX`, "(devel)" for a build from a clone.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "aep-mcp-bridge (unknown version: built without module information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	line := "aep-mcp-bridge " + v
	if rev != "" {
		line += " (commit " + rev[:min(12, len(rev))] + modified + ")"
	}
	return line + " " + bi.GoVersion
}

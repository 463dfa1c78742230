package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/clientconfig"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/textdiff"
)

// runWrap is `aep-mcp-bridge wrap CONFIG`.
func runWrap(_ context.Context, args []string, s stdio) error {
	return rewriteConfig(args, s, false)
}

// runUnwrap is `aep-mcp-bridge unwrap CONFIG`.
func runUnwrap(_ context.Context, args []string, s stdio) error {
	return rewriteConfig(args, s, true)
}

// rewriteConfig is wrap and, with undo, unwrap.
func rewriteConfig(args []string, s stdio, undo bool) error {
	stdout, stderr := s.out, s.err
	name, verb := "wrap", "wrap"
	about := "Rewrites an MCP client's config (Claude Code, Claude Desktop, Cursor, VS Code) so that every server runs through the bridge."
	if undo {
		name, verb = "unwrap", "unwrap"
		about = "Undoes wrap: every server that runs through the bridge runs as it did before."
	}
	fs := newFlagSet(name, name+" CONFIG [--write] [--bridge PATH]", about+"\n"+
		"Shows the change as a diff; --write makes it, keeping a backup in CONFIG"+clientconfig.BackupSuffix+".")
	write := fs.Bool("write", false, "change the file (keeping a backup); without it, only show the diff")
	bridge := fs.String("bridge", "", "the bridge command written into the config (wrap; default: this program's path)")
	var path string
	for rest := args; len(rest) > 0; {
		if err := parseArgs(fs, rest, s); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		if path != "" {
			fmt.Fprintf(stderr, "aep-mcp-bridge %s: give one config file\n", name)
			return errUsage
		}
		path, rest = fs.Arg(0), fs.Args()[1:]
	}
	if path == "" {
		fs.Usage()
		return errUsage
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var out []byte
	var report []string
	if undo {
		backup, _ := os.ReadFile(path + clientconfig.BackupSuffix)
		out, report, err = clientconfig.Unwrap(src, backup)
	} else {
		out, report, err = clientconfig.Wrap(src, bridgeCommand(*bridge))
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, path, err)
	}
	for _, l := range report {
		fmt.Fprintf(stderr, "aep-mcp-bridge %s: %s\n", name, printable(l, false))
	}
	if string(out) == string(src) {
		fmt.Fprintf(stderr, "aep-mcp-bridge %s: nothing to change in %s\n", name, path)
		return nil
	}
	if !*write {
		fmt.Fprint(stdout, textdiff.Unified(path, path+" ("+verb+"ped)", string(src), string(out)))
		fmt.Fprintf(stderr, "aep-mcp-bridge %s: nothing was changed; run again with --write to change %s (a backup goes to %s)\n", name, path, path+clientconfig.BackupSuffix)
		return nil
	}
	if err := clientconfig.WriteFile(path, src, out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "aep-mcp-bridge %s: %s changed; the previous version is in %s\n", name, path, path+clientconfig.BackupSuffix)
	if !undo {
		fmt.Fprintln(stderr, "aep-mcp-bridge wrap: each wrapped server runs through the bridge from the next time your MCP client starts it "+
			"(start or restart the client, or reload its servers); while one runs, aep-mcp-bridge inbox opens the inbox")
	}
	return nil
}

// bridgeCommand is the command wrap writes: --bridge, else this program's
// own path, whatever its file is called (MCP clients started from a
// desktop may not have the shell's PATH, and a renamed or versioned
// binary is what was installed), else the bridge's name when it runs
// from go run's temporary build or as a test binary.
func bridgeCommand(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	self, err := os.Executable()
	if err != nil || strings.Contains(self, "go-build") || strings.HasSuffix(self, ".test") {
		return clientconfig.BridgeName
	}
	return self
}

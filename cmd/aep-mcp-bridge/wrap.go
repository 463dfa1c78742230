package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// backupSuffix names the copy of a config file kept before wrap or unwrap
// writes it.
const backupSuffix = ".aep-mcp-bridge.bak"

// runWrap is `aep-mcp-bridge wrap CONFIG` and, with undo, `unwrap CONFIG`.
func runWrap(args []string, stdout, stderr io.Writer, undo bool) error {
	name, verb := "wrap", "wrap"
	if undo {
		name, verb = "unwrap", "unwrap"
	}
	fs := subcommandFlags(name, name+" CONFIG [--write] [--bridge PATH]\n\n"+
		"Shows the change as a diff; --write makes it, keeping a backup in CONFIG"+backupSuffix+".", stderr)
	write := fs.Bool("write", false, "change the file (keeping a backup); without it, only show the diff")
	bridge := fs.String("bridge", "", "the bridge command written into the config (wrap; default: this program's path)")
	var path string
	for rest := args; len(rest) > 0; {
		if fs.Parse(rest) != nil {
			return errUsage
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
		backup, _ := os.ReadFile(path + backupSuffix)
		out, report, err = unwrapConfig(src, backup)
	} else {
		out, report, err = wrapConfig(src, bridgeCommand(*bridge))
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
		fmt.Fprint(stdout, unifiedDiff(path, path+" ("+verb+"ped)", string(src), string(out)))
		fmt.Fprintf(stderr, "aep-mcp-bridge %s: nothing was changed; run again with --write to change %s (a backup goes to %s)\n", name, path, path+backupSuffix)
		return nil
	}
	if err := writeConfig(path, src, out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "aep-mcp-bridge %s: %s changed; the previous version is in %s\n", name, path, path+backupSuffix)
	return nil
}

// bridgeCommand is the command wrap writes: --bridge, else this program's
// own path (MCP clients started from a desktop may not have the shell's
// PATH), else its name when it runs from go run's temporary build.
func bridgeCommand(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	self, err := os.Executable()
	if err != nil || strings.Contains(self, "go-build") || !isBridge(self) {
		return bridgeName
	}
	return self
}

// wrapConfig wraps every server of a config file.
func wrapConfig(src []byte, bridge string) ([]byte, []string, error) {
	return rewriteConfig(src, func(e serverEntry) (string, string) { return wrapEntry(src, e, bridge) }, "wrapped")
}

// unwrapConfig unwraps every wrapped server of a config file.
func unwrapConfig(src, backup []byte) ([]byte, []string, error) {
	return rewriteConfig(src, func(e serverEntry) (string, string) { return unwrapEntry(src, e, backup) }, "unwrapped")
}

// rewriteConfig replaces each server entry by what edit returns for it.
func rewriteConfig(src []byte, edit func(serverEntry) (string, string), done string) ([]byte, []string, error) {
	root, err := parseJSONC(src)
	if err != nil {
		return nil, nil, err
	}
	entries, err := findServers(root)
	if err != nil {
		return nil, nil, err
	}
	var edits []splice
	var report []string
	for _, e := range entries {
		text, skip := edit(e)
		if skip != "" {
			report = append(report, fmt.Sprintf("%s: left as it is: %s", e.label(), skip))
			continue
		}
		edits = append(edits, splice{e.obj.start, e.obj.end, text})
		report = append(report, fmt.Sprintf("%s: %s", e.label(), done))
	}
	out := applySplices(src, 0, len(src), edits)
	if _, err := parseJSONC([]byte(out)); err != nil {
		return nil, nil, fmt.Errorf("the rewritten file would not parse (%v); nothing was changed", err)
	}
	return []byte(out), report, nil
}

// writeConfig keeps a backup of old and replaces the file with new
// atomically, with the file's own mode.
func writeConfig(path string, old, new []byte) error {
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real // a linked config (a dotfiles folder) stays linked
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.WriteFile(path+backupSuffix, old, mode); err != nil {
		return fmt.Errorf("keeping a backup of %s: %w; nothing was changed", path, err)
	}
	os.Chmod(path+backupSuffix, mode) // WriteFile keeps an existing file's mode
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w; nothing was changed", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(new)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Sync(), tmp.Close())
	if err != nil {
		return fmt.Errorf("writing %s: %w; nothing was changed", path, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("replacing %s: %w; nothing was changed", path, err)
	}
	return nil
}

package clientconfig

import (
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonc"
)

// Wrap wraps every server of a config file with the bridge command
// bridge. It returns the new file and one line per server saying what
// was done to it or why it was left as it is. A server that already runs
// through the bridge is left as it is, so wrapping twice changes nothing.
func Wrap(src []byte, bridge string) ([]byte, []string, error) {
	return rewrite(src, func(e serverEntry) (string, string) { return wrapEntry(src, e, bridge) }, "wrapped")
}

// Unwrap unwraps every wrapped server of a config file. backup, if not
// nil, is the file before the last wrap: an entry that wrapping its
// backup gives exactly comes back byte for byte; any other wrapped entry
// is rebuilt from the bridge's arguments.
func Unwrap(src, backup []byte) ([]byte, []string, error) {
	return rewrite(src, func(e serverEntry) (string, string) { return unwrapEntry(src, e, backup) }, "unwrapped")
}

// rewrite replaces each server entry by what edit returns for it.
func rewrite(src []byte, edit func(serverEntry) (string, string), done string) ([]byte, []string, error) {
	root, err := jsonc.Parse(src)
	if err != nil {
		return nil, nil, err
	}
	entries, err := findServers(root, src)
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
		edits = append(edits, splice{e.obj.Start, e.obj.End, text})
		report = append(report, fmt.Sprintf("%s: %s", e.label(), done))
	}
	out := applySplices(src, 0, len(src), edits)
	if _, err := jsonc.Parse([]byte(out)); err != nil {
		return nil, nil, fmt.Errorf("the rewritten file would not parse (%v); nothing was changed", err)
	}
	return []byte(out), report, nil
}

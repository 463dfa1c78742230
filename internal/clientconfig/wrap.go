package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonc"
)

// serverEntry is one MCP server of a config file: where it sits (the
// section and the server's key) and its object.
type serverEntry struct {
	section, name string
	obj           *jsonc.Node
	st            style // the file's
}

func (e serverEntry) label() string {
	if p, ok := strings.CutPrefix(e.section, "projects."); ok {
		return e.name + " (project " + p + ")"
	}
	return e.name
}

// findServers lists the servers of every shape wrap knows:
//   - mcpServers at the top (Claude Code's .mcp.json and ~/.claude.json,
//     Claude Desktop, Cursor);
//   - projects.<path>.mcpServers (~/.claude.json's per-project servers);
//   - servers at the top (VS Code's .vscode/mcp.json) and mcp.servers (its
//     user settings.json).
func findServers(root *jsonc.Node, src []byte) ([]serverEntry, error) {
	if root.Kind != '{' {
		return nil, fmt.Errorf("the file is not a JSON object")
	}
	var out []serverEntry
	st := fileStyle(root, src)
	add := func(section string, m *jsonc.Member) {
		if m == nil || m.Val.Kind != '{' {
			return
		}
		for _, s := range m.Val.Members {
			if s.Val.Kind == '{' {
				out = append(out, serverEntry{section: section, name: s.Key, obj: s.Val, st: st})
			}
		}
	}
	found := false
	for _, name := range []string{"mcpServers", "servers"} {
		if m := root.Member(name); m != nil {
			found = true
			add(name, m)
		}
	}
	if m := root.Member("mcp"); m != nil {
		if s := m.Val.Member("servers"); s != nil {
			found = true
			add("mcp.servers", s)
		}
	}
	if m := root.Member("projects"); m != nil && m.Val.Kind == '{' {
		for _, p := range m.Val.Members {
			if s := p.Val.Member("mcpServers"); s != nil {
				found = true
				add("projects."+p.Key, s)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no MCP servers section: wrap knows mcpServers (Claude Code, Claude Desktop, Cursor), projects.*.mcpServers (~/.claude.json) and servers (VS Code)")
	}
	return out, nil
}

// BridgeName is the binary's name; a command with this base name runs
// the bridge.
const BridgeName = "aep-mcp-bridge"

// IsBridge reports whether the command cmd (a path or a name, Unix or
// Windows) is the bridge by its name.
func IsBridge(cmd string) bool {
	base := strings.TrimSuffix(filepath.Base(strings.ReplaceAll(cmd, `\`, "/")), ".exe")
	return base == BridgeName
}

// wrapped reports whether a server entry runs through the bridge. wrap
// may write any command for the bridge (--bridge: a renamed or versioned
// binary, a wrapper script), so an entry is known by what wrap writes
// after it: args that start with --name and the entry's own key, then
// -- and a command, or --url and a URL. A stdio entry whose command is
// the bridge by name (IsBridge) counts too: one wrapped by hand, or whose
// key was renamed since.
func wrapped(e serverEntry) bool {
	c := e.obj.Member("command")
	if c == nil || c.Val.Kind != '"' {
		return false
	}
	if IsBridge(c.Val.Str) {
		return true
	}
	a := e.obj.Member("args")
	if a == nil || a.Val.Kind != '[' || len(a.Val.Elems) < 4 {
		return false
	}
	el := a.Val.Elems
	for _, x := range el[:4] {
		if x.Kind != '"' {
			return false
		}
	}
	return el[0].Str == "--name" && el[1].Str == e.name && (el[2].Str == "--" || el[2].Str == "--url")
}

// headerEnvPrefix names the environment variables that carry a wrapped
// URL server's headers: headers often hold credentials, and a process's
// environment, unlike its command line, is private to its user.
const headerEnvPrefix = "AEP_MCP_HEADER_"

// splice is an edit of a byte range.
type splice struct {
	start, end int
	text       string
}

// applySplices applies non-overlapping edits to src[from:to] and returns
// the edited range.
func applySplices(src []byte, from, to int, edits []splice) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b strings.Builder
	at := from
	for _, e := range edits {
		b.Write(src[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.Write(src[at:to])
	return b.String()
}

// jsonText encodes a string as JSON without HTML escaping.
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// spaceBefore returns the whitespace run that ends at i.
func spaceBefore(src []byte, i int) string {
	j := i
	for j > 0 && strings.IndexByte(" \t\r\n", src[j-1]) >= 0 {
		j--
	}
	return string(src[j:i])
}

// style is how a file lays out what wrap inserts, learned from the file
// itself so that inserted text reads like the rest and unwrap can take it
// out again exactly.
type style struct {
	item string // after a comma on one line: " ", or "" in a minified file
}

// fileStyle reads the separators a file uses: a file where no member's
// name is followed by a space before or after its colon is minified, and
// what wrap inserts on one line has no spaces either; any other file gets
// a space after each comma.
func fileStyle(root *jsonc.Node, src []byte) style {
	spaced := false
	var walk func(n *jsonc.Node)
	walk = func(n *jsonc.Node) {
		for i := range n.Members {
			if spaced {
				return
			}
			spaced = colonOf(src, &n.Members[i]) != ":"
			walk(n.Members[i].Val)
		}
		for _, e := range n.Elems {
			walk(e)
		}
	}
	walk(root)
	if spaced {
		return style{item: " "}
	}
	return style{item: ""}
}

// memberSep returns what follows each comma between the members of obj
// (see commaSep). A one-line entry in a spaced file so gets ", ", as the
// rest of the file reads.
func memberSep(src []byte, obj *jsonc.Node, st style) string {
	starts := make([]int, 0, 2)
	for _, m := range obj.Members[:min(2, len(obj.Members))] {
		starts = append(starts, m.KeyStart)
	}
	return commaSep(src, starts, st)
}

// colonOf returns the text between a member's name and its value.
func colonOf(src []byte, m *jsonc.Member) string {
	return string(src[m.KeyEnd:m.Val.Start])
}

// itemSep returns what follows each comma of an array (see commaSep).
func itemSep(src []byte, arr *jsonc.Node, st style) string {
	starts := make([]int, 0, 2)
	for _, e := range arr.Elems[:min(2, len(arr.Elems))] {
		starts = append(starts, e.Start)
	}
	return commaSep(src, starts, st)
}

// commaSep returns what follows each comma of a list whose first items
// start at starts: the space before its second item, or before its first
// when that is a line break, or the file's style.
func commaSep(src []byte, starts []int, st style) string {
	switch {
	case len(starts) >= 2:
		return spaceBefore(src, starts[1])
	case len(starts) == 1 && strings.Contains(spaceBefore(src, starts[0]), "\n"):
		return spaceBefore(src, starts[0])
	}
	return st.item
}

// removeMember is the edit that removes member m of obj with its comma.
func removeMember(obj *jsonc.Node, idx int) splice {
	m := obj.Members[idx]
	if idx > 0 {
		return splice{obj.Members[idx-1].Val.End, m.Val.End, ""}
	}
	if len(obj.Members) > 1 {
		return splice{m.KeyStart, obj.Members[1].KeyStart, ""}
	}
	return splice{m.KeyStart, m.Val.End, ""}
}

// wrapEntry returns the entry's object rewritten to run through the
// bridge, or a reason it is left alone ("" text).
func wrapEntry(src []byte, e serverEntry, bridge string) (text, skip string) {
	obj := e.obj
	if c := obj.Member("command"); c != nil {
		if c.Val.Kind != '"' {
			return "", "its command is not a string"
		}
		if wrapped(e) {
			return "", "already runs through the bridge"
		}
		return wrapStdio(src, e, bridge)
	}
	if u := obj.Member("url"); u != nil && u.Val.Kind == '"' {
		return wrapURL(src, e, bridge)
	}
	return "", "it has neither a command nor a url"
}

// wrapStdio makes `command args...` into `bridge --name KEY -- command
// args...`, inserting before the first original argument so that unwrap
// removes exactly what was inserted.
func wrapStdio(src []byte, e serverEntry, bridge string) (string, string) {
	obj := e.obj
	cmd := obj.Member("command")
	st := e.st
	prefix := []string{jsonText("--name"), jsonText(e.name), jsonText("--"), string(src[cmd.Val.Start:cmd.Val.End])}
	edits := []splice{{cmd.Val.Start, cmd.Val.End, jsonText(bridge)}}
	switch args := obj.Member("args"); {
	case args == nil:
		text := "," + memberSep(src, obj, st) + `"args"` + colonOf(src, cmd) + "[" + strings.Join(prefix, ","+st.item) + "]"
		edits = append(edits, splice{cmd.Val.End, cmd.Val.End, text})
	case args.Val.Kind != '[':
		return "", "its args are not a list"
	case len(args.Val.Elems) == 0:
		edits = append(edits, splice{args.Val.Start + 1, args.Val.Start + 1, strings.Join(prefix, ","+st.item)})
	default:
		sep := itemSep(src, args.Val, st)
		edits = append(edits, splice{args.Val.Elems[0].Start, args.Val.Elems[0].Start, strings.Join(prefix, ","+sep) + "," + sep})
	}
	return applySplices(src, obj.Start, obj.End, edits), ""
}

// wrapURL makes a remote server entry into a bridge command with --url;
// its headers move to the entry's environment.
func wrapURL(src []byte, e serverEntry, bridge string) (string, string) {
	obj := e.obj
	if obj.Member("env") != nil {
		return "", "a url entry with env is not a shape wrap knows"
	}
	u := obj.Member("url")
	args := []string{"--name", e.name, "--url", u.Val.Str}
	var edits []splice
	if i := obj.MemberIndex("type"); i >= 0 {
		t := obj.Members[i].Val
		switch t.Str {
		case "http":
		case "streamable-http":
			args = append(args, "--transport", "streamable")
		case "sse":
			args = append(args, "--transport", "sse")
		default:
			return "", fmt.Sprintf("its type %s is not one wrap knows", string(src[t.Start:t.End]))
		}
		edits = append(edits, splice{t.Start, t.End, jsonText("stdio")})
	}
	st := e.st
	colon := colonOf(src, u)
	var env []string
	if i := obj.MemberIndex("headers"); i >= 0 {
		h := obj.Members[i].Val
		if h.Kind != '{' {
			return "", "its headers are not an object"
		}
		for k, m := range h.Members {
			if m.Val.Kind != '"' {
				return "", fmt.Sprintf("its header %q is not a string", m.Key)
			}
			name := fmt.Sprintf("%s%d", headerEnvPrefix, k+1)
			args = append(args, "--header-env", name)
			env = append(env, jsonText(name)+colon+jsonText(m.Key+": "+m.Val.Str))
		}
		edits = append(edits, removeMember(obj, i))
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = jsonText(a)
	}
	ws := memberSep(src, obj, st)
	text := `"command"` + colon + jsonText(bridge) + "," + ws + `"args"` + colon + "[" + strings.Join(quoted, ","+st.item) + "]"
	if len(env) > 0 {
		text += "," + ws + `"env"` + colon + "{" + strings.Join(env, ","+st.item) + "}"
	}
	edits = append(edits, splice{u.KeyStart, u.Val.End, text})
	return applySplices(src, obj.Start, obj.End, edits), ""
}

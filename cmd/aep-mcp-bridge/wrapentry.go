package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// serverEntry is one MCP server of a config file: where it sits (the
// section and the server's key) and its object.
type serverEntry struct {
	section, name string
	obj           *jnode
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
func findServers(root *jnode) ([]serverEntry, error) {
	if root.kind != '{' {
		return nil, fmt.Errorf("the file is not a JSON object")
	}
	var out []serverEntry
	add := func(section string, m *jmember) {
		if m == nil || m.val.kind != '{' {
			return
		}
		for _, s := range m.val.members {
			if s.val.kind == '{' {
				out = append(out, serverEntry{section: section, name: s.key, obj: s.val})
			}
		}
	}
	found := false
	for _, name := range []string{"mcpServers", "servers"} {
		if m := root.member(name); m != nil {
			found = true
			add(name, m)
		}
	}
	if m := root.member("mcp"); m != nil {
		if s := m.val.member("servers"); s != nil {
			found = true
			add("mcp.servers", s)
		}
	}
	if m := root.member("projects"); m != nil && m.val.kind == '{' {
		for _, p := range m.val.members {
			if s := p.val.member("mcpServers"); s != nil {
				found = true
				add("projects."+p.key, s)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no MCP servers section: wrap knows mcpServers (Claude Code, Claude Desktop, Cursor), projects.*.mcpServers (~/.claude.json) and servers (VS Code)")
	}
	return out, nil
}

// bridgeName is the binary's name; a command with this base name is a
// wrapped server.
const bridgeName = "aep-mcp-bridge"

func isBridge(cmd string) bool {
	base := strings.TrimSuffix(filepath.Base(strings.ReplaceAll(cmd, `\`, "/")), ".exe")
	return base == bridgeName
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
	item  string // after the comma between array items on one line
	colon string // between a member's name and its value
}

// fileStyle reads the one-line separators a file uses: a file with no
// ": " anywhere is compact.
func fileStyle(src []byte) style {
	if bytes.Contains(src, []byte(": ")) {
		return style{item: " ", colon: ": "}
	}
	return style{item: "", colon: ":"}
}

// colonOf returns the text between a member's name and its value.
func colonOf(src []byte, m *jmember) string {
	return string(src[m.keyEnd:m.val.start])
}

// itemSep returns what follows each comma of an array: the space before
// its second item, or before its first when that is a line break, or the
// file's style.
func itemSep(src []byte, arr *jnode, st style) string {
	if len(arr.elems) >= 2 {
		return spaceBefore(src, arr.elems[1].start)
	}
	if len(arr.elems) == 1 {
		if ws := spaceBefore(src, arr.elems[0].start); strings.Contains(ws, "\n") {
			return ws
		}
	}
	return st.item
}

// removeMember is the edit that removes member m of obj with its comma.
func removeMember(obj *jnode, idx int) splice {
	m := obj.members[idx]
	if idx > 0 {
		return splice{obj.members[idx-1].val.end, m.val.end, ""}
	}
	if len(obj.members) > 1 {
		return splice{m.keyStart, obj.members[1].keyStart, ""}
	}
	return splice{m.keyStart, m.val.end, ""}
}

// memberIndex returns the index of key in obj, or -1.
func memberIndex(obj *jnode, key string) int {
	for i, m := range obj.members {
		if m.key == key {
			return i
		}
	}
	return -1
}

// wrapEntry returns the entry's object rewritten to run through the
// bridge, or a reason it is left alone ("" text).
func wrapEntry(src []byte, e serverEntry, bridge string) (text, skip string) {
	obj := e.obj
	if c := obj.member("command"); c != nil {
		if c.val.kind != '"' {
			return "", "its command is not a string"
		}
		if isBridge(c.val.str) {
			return "", "already runs through the bridge"
		}
		return wrapStdio(src, e, bridge)
	}
	if u := obj.member("url"); u != nil && u.val.kind == '"' {
		return wrapURL(src, e, bridge)
	}
	return "", "it has neither a command nor a url"
}

// wrapStdio makes `command args...` into `bridge --name KEY -- command
// args...`, inserting before the first original argument so that unwrap
// removes exactly what was inserted.
func wrapStdio(src []byte, e serverEntry, bridge string) (string, string) {
	obj := e.obj
	cmd := obj.member("command")
	st := fileStyle(src)
	prefix := []string{jsonText("--name"), jsonText(e.name), jsonText("--"), string(src[cmd.val.start:cmd.val.end])}
	edits := []splice{{cmd.val.start, cmd.val.end, jsonText(bridge)}}
	switch args := obj.member("args"); {
	case args == nil:
		text := "," + spaceBefore(src, cmd.keyStart) + `"args"` + colonOf(src, cmd) + "[" + strings.Join(prefix, ","+st.item) + "]"
		edits = append(edits, splice{cmd.val.end, cmd.val.end, text})
	case args.val.kind != '[':
		return "", "its args are not a list"
	case len(args.val.elems) == 0:
		edits = append(edits, splice{args.val.start + 1, args.val.start + 1, strings.Join(prefix, ","+st.item)})
	default:
		sep := itemSep(src, args.val, st)
		edits = append(edits, splice{args.val.elems[0].start, args.val.elems[0].start, strings.Join(prefix, ","+sep) + "," + sep})
	}
	return applySplices(src, obj.start, obj.end, edits), ""
}

// wrapURL makes a remote server entry into a bridge command with --url;
// its headers move to the entry's environment.
func wrapURL(src []byte, e serverEntry, bridge string) (string, string) {
	obj := e.obj
	if obj.member("env") != nil {
		return "", "a url entry with env is not a shape wrap knows"
	}
	u := obj.member("url")
	args := []string{"--name", e.name, "--url", u.val.str}
	var edits []splice
	if i := memberIndex(obj, "type"); i >= 0 {
		t := obj.members[i].val
		switch t.str {
		case "http":
		case "streamable-http":
			args = append(args, "--transport", "streamable")
		case "sse":
			args = append(args, "--transport", "sse")
		default:
			return "", fmt.Sprintf("its type %s is not one wrap knows", string(src[t.start:t.end]))
		}
		edits = append(edits, splice{t.start, t.end, jsonText("stdio")})
	}
	st := fileStyle(src)
	colon := colonOf(src, u)
	var env []string
	if i := memberIndex(obj, "headers"); i >= 0 {
		h := obj.members[i].val
		if h.kind != '{' {
			return "", "its headers are not an object"
		}
		for k, m := range h.members {
			if m.val.kind != '"' {
				return "", fmt.Sprintf("its header %q is not a string", m.key)
			}
			name := fmt.Sprintf("%s%d", headerEnvPrefix, k+1)
			args = append(args, "--header-env", name)
			env = append(env, jsonText(name)+colon+jsonText(m.key+": "+m.val.str))
		}
		edits = append(edits, removeMember(obj, i))
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = jsonText(a)
	}
	ws := spaceBefore(src, u.keyStart)
	text := `"command"` + colon + jsonText(bridge) + "," + ws + `"args"` + colon + "[" + strings.Join(quoted, ","+st.item) + "]"
	if len(env) > 0 {
		text += "," + ws + `"env"` + colon + "{" + strings.Join(env, ","+st.item) + "}"
	}
	edits = append(edits, splice{u.keyStart, u.val.end, text})
	return applySplices(src, obj.start, obj.end, edits), ""
}

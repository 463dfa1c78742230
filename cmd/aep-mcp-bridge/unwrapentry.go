package main

import (
	"strings"
)

// unwrapEntry returns the entry's object as it was before wrap, or a
// reason it is left alone ("" text). backup, if not nil, is the file
// before the last wrap: when wrapping its entry of the same name gives
// exactly this entry, that entry comes back byte for byte. Otherwise the
// entry is rebuilt from the bridge's arguments: a stdio entry exactly as
// wrap left it, a URL entry with its url, type and headers.
func unwrapEntry(src []byte, e serverEntry, backup []byte) (text, skip string) {
	cmd := e.obj.member("command")
	if cmd == nil || cmd.val.kind != '"' || !isBridge(cmd.val.str) {
		return "", "does not run through the bridge"
	}
	if t, ok := fromBackup(src, e, backup, cmd.val.str); ok {
		return t, ""
	}
	args := e.obj.member("args")
	if args == nil || args.val.kind != '[' {
		return "", "runs the bridge without arguments; not wrapped by wrap"
	}
	for _, a := range args.val.elems {
		if a.kind != '"' {
			return "", "its args are not all strings"
		}
	}
	for i, a := range args.val.elems {
		switch a.str {
		case "--":
			return unwrapStdio(src, e, i)
		case "--url":
			return unwrapURL(src, e)
		}
	}
	return "", "runs the bridge with neither -- COMMAND nor --url; not wrapped by wrap"
}

// fromBackup finds the entry in the backup and returns it when wrapping
// it with bridge gives exactly the current entry.
func fromBackup(src []byte, e serverEntry, backup []byte, bridge string) (string, bool) {
	if backup == nil {
		return "", false
	}
	root, err := parseJSONC(backup)
	if err != nil {
		return "", false
	}
	entries, err := findServers(root)
	if err != nil {
		return "", false
	}
	for _, b := range entries {
		if b.section != e.section || b.name != e.name {
			continue
		}
		if w, skip := wrapEntry(backup, b, bridge); skip == "" && w == string(src[e.obj.start:e.obj.end]) {
			return string(backup[b.obj.start:b.obj.end]), true
		}
	}
	return "", false
}

// unwrapStdio undoes wrapStdio: dash is the index of "--" in args.
func unwrapStdio(src []byte, e serverEntry, dash int) (string, string) {
	obj := e.obj
	cmd := obj.member("command")
	ai := memberIndex(obj, "args")
	elems := obj.members[ai].val.elems
	if dash+1 >= len(elems) {
		return "", "runs the bridge with -- but no command after it"
	}
	orig := elems[dash+1]
	edits := []splice{{cmd.val.start, cmd.val.end, string(src[orig.start:orig.end])}}
	switch {
	case dash+2 < len(elems):
		edits = append(edits, splice{elems[0].start, elems[dash+2].start, ""})
	case ai > 0 && obj.members[ai-1].key == "command" && onlyComma(src[cmd.val.end:obj.members[ai].keyStart]):
		// wrap added the args member right after the command
		edits = append(edits, splice{cmd.val.end, obj.members[ai].val.end, ""})
	default:
		edits = append(edits, splice{elems[0].start, elems[len(elems)-1].end, ""})
	}
	return applySplices(src, obj.start, obj.end, edits), ""
}

// onlyComma reports whether b is a comma amid whitespace.
func onlyComma(b []byte) bool {
	return strings.TrimSpace(string(b)) == ","
}

// unwrapURL undoes wrapURL from the bridge's arguments.
func unwrapURL(src []byte, e serverEntry) (string, string) {
	obj := e.obj
	cmd := obj.member("command")
	ai := memberIndex(obj, "args")
	var url, transport string
	var headerEnv []string
	elems := obj.members[ai].val.elems
	for i := 0; i < len(elems); i++ {
		next := ""
		if i+1 < len(elems) {
			next = elems[i+1].str
		}
		switch elems[i].str {
		case "--url":
			url, i = next, i+1
		case "--transport":
			transport, i = next, i+1
		case "--header-env":
			headerEnv, i = append(headerEnv, next), i+1
		case "--name":
			i++
		}
	}
	var headers []string
	env := memberIndex(obj, "env")
	for _, name := range headerEnv {
		if env < 0 {
			return "", "its headers' environment is missing"
		}
		v := obj.members[env].val.member(name)
		if v == nil || v.val.kind != '"' {
			return "", "its header variable " + name + " is missing"
		}
		k, val, ok := strings.Cut(v.val.str, ":")
		if !ok {
			return "", "its header variable " + name + " is not 'Name: value'"
		}
		headers = append(headers, jsonText(strings.TrimSpace(k))+colonOf(src, cmd)+jsonText(strings.TrimSpace(val)))
	}
	ws := spaceBefore(src, cmd.keyStart)
	text := `"url"` + colonOf(src, cmd) + jsonText(url)
	if len(headers) > 0 {
		text += "," + ws + `"headers"` + colonOf(src, cmd) + objectText(headers, ws, spaceBefore(src, obj.end-1), fileStyle(src))
	}
	edits := []splice{{cmd.keyStart, cmd.val.end, text}, removeMember(obj, ai)}
	if env >= 0 && len(headerEnv) > 0 {
		edits = append(edits, removeMember(obj, env))
	}
	if ti := memberIndex(obj, "type"); ti >= 0 && obj.members[ti].val.str == "stdio" {
		t := "http"
		switch transport {
		case "sse":
			t = "sse"
		case "streamable":
			t = "streamable-http"
		}
		v := obj.members[ti].val
		edits = append(edits, splice{v.start, v.end, jsonText(t)})
	}
	return applySplices(src, obj.start, obj.end, dedupe(edits)), ""
}

// objectText lays out an object's members as the entry around it is laid
// out: one per line, indented one step deeper than the entry's members,
// when the entry puts its members on lines of their own (memberWS is the
// space before them, closeWS the space before the entry's "}").
func objectText(members []string, memberWS, closeWS string, st style) string {
	if !strings.Contains(memberWS, "\n") {
		return "{" + strings.Join(members, ","+st.item) + "}"
	}
	indent := memberWS[strings.LastIndexByte(memberWS, '\n')+1:]
	outer := closeWS[strings.LastIndexByte(closeWS, '\n')+1:]
	inner := indent + strings.TrimPrefix(indent, outer)
	return "{\n" + inner + strings.Join(members, ",\n"+inner) + "\n" + indent + "}"
}

// dedupe merges removals that touch, so two adjacent member removals do
// not overlap.
func dedupe(edits []splice) []splice {
	var out []splice
	for _, e := range edits {
		merged := false
		for i := range out {
			if e.start < out[i].end && out[i].start < e.end {
				if e.start < out[i].start {
					out[i].start = e.start
				}
				if e.end > out[i].end {
					out[i].end = e.end
				}
				out[i].text += e.text
				merged = true
			}
		}
		if !merged {
			out = append(out, e)
		}
	}
	return out
}

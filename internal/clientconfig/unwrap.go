package clientconfig

import (
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonc"
)

// unwrapEntry returns the entry's object as it was before wrap, or a
// reason it is left alone ("" text). backup, if not nil, is the file
// before the last wrap: when wrapping its entry of the same name gives
// exactly this entry, that entry comes back byte for byte. Otherwise the
// entry is rebuilt from the bridge's arguments: a stdio entry exactly as
// wrap left it, a URL entry with its url, type and headers.
func unwrapEntry(src []byte, e serverEntry, backup []byte) (text, skip string) {
	if !wrapped(e) {
		return "", "does not run through the bridge"
	}
	cmd := e.obj.Member("command")
	if t, ok := fromBackup(src, e, backup, cmd.Val.Str); ok {
		return t, ""
	}
	args := e.obj.Member("args")
	if args == nil || args.Val.Kind != '[' {
		return "", "runs the bridge without arguments; not wrapped by wrap"
	}
	for _, a := range args.Val.Elems {
		if a.Kind != '"' {
			return "", "its args are not all strings"
		}
	}
	for i := 0; i < len(args.Val.Elems); i++ {
		switch args.Val.Elems[i].Str {
		case "--name":
			i++ // its value is the entry's key, which may be "--"
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
	root, err := jsonc.Parse(backup)
	if err != nil {
		return "", false
	}
	entries, err := findServers(root, backup)
	if err != nil {
		return "", false
	}
	for _, b := range entries {
		if b.section != e.section || b.name != e.name {
			continue
		}
		if w, skip := wrapEntry(backup, b, bridge); skip == "" && w == string(src[e.obj.Start:e.obj.End]) {
			return string(backup[b.obj.Start:b.obj.End]), true
		}
	}
	return "", false
}

// unwrapStdio undoes wrapStdio: dash is the index of "--" in args.
func unwrapStdio(src []byte, e serverEntry, dash int) (string, string) {
	obj := e.obj
	cmd := obj.Member("command")
	ai := obj.MemberIndex("args")
	elems := obj.Members[ai].Val.Elems
	if dash+1 >= len(elems) {
		return "", "runs the bridge with -- but no command after it"
	}
	orig := elems[dash+1]
	edits := []splice{{cmd.Val.Start, cmd.Val.End, string(src[orig.Start:orig.End])}}
	switch {
	case dash+2 < len(elems):
		edits = append(edits, splice{elems[0].Start, elems[dash+2].Start, ""})
	case ai > 0 && obj.Members[ai-1].Key == "command" && onlyComma(src[cmd.Val.End:obj.Members[ai].KeyStart]):
		// wrap added the args member right after the command
		edits = append(edits, splice{cmd.Val.End, obj.Members[ai].Val.End, ""})
	default:
		edits = append(edits, splice{elems[0].Start, elems[len(elems)-1].End, ""})
	}
	return applySplices(src, obj.Start, obj.End, edits), ""
}

// onlyComma reports whether b is a comma amid whitespace.
func onlyComma(b []byte) bool {
	return strings.TrimSpace(string(b)) == ","
}

// unwrapURL undoes wrapURL from the bridge's arguments.
func unwrapURL(src []byte, e serverEntry) (string, string) {
	obj := e.obj
	cmd := obj.Member("command")
	ai := obj.MemberIndex("args")
	var url, transport string
	var headerEnv []string
	elems := obj.Members[ai].Val.Elems
	for i := 0; i < len(elems); i++ {
		next := ""
		if i+1 < len(elems) {
			next = elems[i+1].Str
		}
		switch elems[i].Str {
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
	env := obj.MemberIndex("env")
	for _, name := range headerEnv {
		if env < 0 {
			return "", "its headers' environment is missing"
		}
		v := obj.Members[env].Val.Member(name)
		if v == nil || v.Val.Kind != '"' {
			return "", "its header variable " + name + " is missing"
		}
		k, val, ok := strings.Cut(v.Val.Str, ":")
		if !ok {
			return "", "its header variable " + name + " is not 'Name: value'"
		}
		headers = append(headers, jsonText(strings.TrimSpace(k))+colonOf(src, cmd)+jsonText(strings.TrimSpace(val)))
	}
	ws := memberSep(src, obj, e.st)
	text := `"url"` + colonOf(src, cmd) + jsonText(url)
	if len(headers) > 0 {
		text += "," + ws + `"headers"` + colonOf(src, cmd) + objectText(headers, ws, spaceBefore(src, obj.End-1), e.st)
	}
	edits := []splice{{cmd.KeyStart, cmd.Val.End, text}, removeMember(obj, ai)}
	if env >= 0 && len(headerEnv) > 0 {
		edits = append(edits, removeMember(obj, env))
	}
	if ti := obj.MemberIndex("type"); ti >= 0 && obj.Members[ti].Val.Str == "stdio" {
		t := "http"
		switch transport {
		case "sse":
			t = "sse"
		case "streamable":
			t = "streamable-http"
		}
		v := obj.Members[ti].Val
		edits = append(edits, splice{v.Start, v.End, jsonText(t)})
	}
	return applySplices(src, obj.Start, obj.End, dedupe(edits)), ""
}

// objectText lays out an object's members as the entry around it is laid
// out: one per line, indented one step deeper than the entry's members,
// when the entry puts its members on lines of their own (memberWS is the
// space before them, closeWS the space before the entry's "}").
func objectText(members []string, memberWS, closeWS string, st style) string {
	if !strings.Contains(memberWS, "\n") {
		return "{" + strings.Join(members, ","+st.item) + "}"
	}
	nl := "\n"
	if strings.Contains(memberWS, "\r\n") { // a CRLF file stays one
		nl = "\r\n"
	}
	indent := memberWS[strings.LastIndexByte(memberWS, '\n')+1:]
	outer := closeWS[strings.LastIndexByte(closeWS, '\n')+1:]
	inner := indent + strings.TrimPrefix(indent, outer)
	return "{" + nl + inner + strings.Join(members, ","+nl+inner) + nl + indent + "}"
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

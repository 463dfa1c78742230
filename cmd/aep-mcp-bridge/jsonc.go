package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The MCP clients' config files are JSON, and VS Code's are JSON with
// comments and trailing commas. wrap and unwrap edit them in place, so
// they need each value's byte span: this parser records spans and nothing
// else is touched, which keeps comments, formatting, key order and
// unknown keys exactly as they were.

// jnode is one value of a config file and its byte span [start, end).
type jnode struct {
	kind       byte // '{', '[', '"', or 'v' for numbers, true, false and null
	start, end int
	str        string // a string's value
	members    []jmember
	elems      []*jnode
}

// jmember is one member of an object: its key's span and its value.
type jmember struct {
	key              string
	keyStart, keyEnd int
	val              *jnode
}

// member returns the member named key, or nil.
func (n *jnode) member(key string) *jmember {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i := range n.members {
		if n.members[i].key == key {
			return &n.members[i]
		}
	}
	return nil
}

// maxConfigDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxConfigDepth = 512

type jparser struct {
	b     []byte
	i     int
	depth int
}

// parseJSONC parses a JSON or JSONC document.
func parseJSONC(b []byte) (*jnode, error) {
	p := &jparser{b: b}
	if err := p.space(); err != nil {
		return nil, err
	}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.i != len(p.b) {
		return nil, p.errorf("unexpected %q after the document", p.b[p.i])
	}
	return n, nil
}

func (p *jparser) errorf(format string, a ...any) error {
	line := 1 + strings.Count(string(p.b[:min(p.i, len(p.b))]), "\n")
	col := p.i - strings.LastIndexByte(string(p.b[:min(p.i, len(p.b))]), '\n')
	return fmt.Errorf("line %d, column %d: %s", line, col, fmt.Sprintf(format, a...))
}

// space skips whitespace and comments.
func (p *jparser) space() error {
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == '/' && p.i+1 < len(p.b) && p.b[p.i+1] == '/':
			for p.i < len(p.b) && p.b[p.i] != '\n' {
				p.i++
			}
		case c == '/' && p.i+1 < len(p.b) && p.b[p.i+1] == '*':
			end := strings.Index(string(p.b[p.i+2:]), "*/")
			if end < 0 {
				return p.errorf("unterminated /* comment")
			}
			p.i += end + 4
		default:
			return nil
		}
	}
	return nil
}

func (p *jparser) value() (*jnode, error) {
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end of the document")
	}
	switch c := p.b[p.i]; {
	case c == '{' || c == '[':
		p.depth++
		if p.depth > maxConfigDepth {
			return nil, p.errorf("nested deeper than %d levels", maxConfigDepth)
		}
		defer func() { p.depth-- }()
		if c == '{' {
			return p.object()
		}
		return p.array()
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z':
		return p.scalar()
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

func (p *jparser) object() (*jnode, error) {
	n := &jnode{kind: '{', start: p.i}
	p.i++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			n.end = p.i
			return n, nil
		}
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.errorf(`expected a member name in quotes or "}"`)
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errorf(`expected ":" after the member name %q`, key.str)
		}
		p.i++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, jmember{key: key.str, keyStart: key.start, keyEnd: key.end, val: v})
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.b) && p.b[p.i] == '}' {
			continue
		}
		return nil, p.errorf(`expected "," or "}" after the member %q`, key.str)
	}
}

func (p *jparser) array() (*jnode, error) {
	n := &jnode{kind: '[', start: p.i}
	p.i++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			n.end = p.i
			return n, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.b) && p.b[p.i] == ']' {
			continue
		}
		return nil, p.errorf(`expected "," or "]" in an array`)
	}
}

func (p *jparser) string() (*jnode, error) {
	start := p.i
	p.i++
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			var s string
			if err := json.Unmarshal(p.b[start:p.i], &s); err != nil || !utf8.Valid(p.b[start:p.i]) {
				p.i = start
				return nil, p.errorf("a string that is not valid JSON")
			}
			return &jnode{kind: '"', start: start, end: p.i, str: s}, nil
		case c == '\\':
			p.i += 2
		case c < 0x20:
			return nil, p.errorf("a control character inside a string")
		default:
			p.i++
		}
	}
	p.i = start
	return nil, p.errorf("unterminated string")
}

func (p *jparser) scalar() (*jnode, error) {
	start := p.i
	for p.i < len(p.b) && strings.IndexByte("+-.0123456789abcdefghijklmnopqrstuvwxyzE", p.b[p.i]) >= 0 {
		p.i++
	}
	text := string(p.b[start:p.i])
	var v any
	if text != "true" && text != "false" && text != "null" && json.Unmarshal(p.b[start:p.i], &v) != nil {
		p.i = start
		return nil, p.errorf("%q is not a JSON value", text)
	}
	return &jnode{kind: 'v', start: start, end: p.i}, nil
}

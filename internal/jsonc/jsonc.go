package jsonc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Node is one value of a document and its byte span [Start, End).
type Node struct {
	Kind       byte // '{', '[', '"', or 'v' for numbers, true, false and null
	Start, End int
	Str        string   // a string's value
	Members    []Member // an object's members, in the file's order
	Elems      []*Node  // an array's elements
}

// Member is one member of an object: its key, the key's span (quotes
// included) and its value.
type Member struct {
	Key              string
	KeyStart, KeyEnd int
	Val              *Node
}

// Member returns the first member named key of an object, or nil (also
// when n is nil or not an object).
func (n *Node) Member(key string) *Member {
	if n == nil || n.Kind != '{' {
		return nil
	}
	for i := range n.Members {
		if n.Members[i].Key == key {
			return &n.Members[i]
		}
	}
	return nil
}

// MemberIndex returns the index of the first member named key, or -1.
func (n *Node) MemberIndex(key string) int {
	if n == nil {
		return -1
	}
	for i, m := range n.Members {
		if m.Key == key {
			return i
		}
	}
	return -1
}

// bom is the UTF-8 byte order mark.
var bom = []byte("\ufeff")

// MaxDepth bounds nesting, so a hostile file cannot exhaust the stack.
const MaxDepth = 512

type parser struct {
	b     []byte
	i     int
	depth int
}

// Parse parses a JSON or JSONC document. An error names the line and
// column where the document stops being one. A UTF-8 byte order mark at
// the start, which some Windows editors write, is skipped (RFC 8259 §8.1
// lets a parser ignore it): spans count from the first byte, so an editor
// that splices into the document keeps the mark.
func Parse(b []byte) (*Node, error) {
	p := &parser{b: b}
	if bytes.HasPrefix(b, bom) {
		p.i = len(bom)
	}
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

func (p *parser) errorf(format string, a ...any) error {
	line := 1 + strings.Count(string(p.b[:min(p.i, len(p.b))]), "\n")
	col := p.i - strings.LastIndexByte(string(p.b[:min(p.i, len(p.b))]), '\n')
	return fmt.Errorf("line %d, column %d: %s", line, col, fmt.Sprintf(format, a...))
}

// space skips whitespace and comments.
func (p *parser) space() error {
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

func (p *parser) value() (*Node, error) {
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end of the document")
	}
	switch c := p.b[p.i]; {
	case c == '{' || c == '[':
		p.depth++
		if p.depth > MaxDepth {
			return nil, p.errorf("nested deeper than %d levels", MaxDepth)
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

func (p *parser) object() (*Node, error) {
	n := &Node{Kind: '{', Start: p.i}
	p.i++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			n.End = p.i
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
			return nil, p.errorf(`expected ":" after the member name %q`, key.Str)
		}
		p.i++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.Members = append(n.Members, Member{Key: key.Str, KeyStart: key.Start, KeyEnd: key.End, Val: v})
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
		return nil, p.errorf(`expected "," or "}" after the member %q`, key.Str)
	}
}

func (p *parser) array() (*Node, error) {
	n := &Node{Kind: '[', Start: p.i}
	p.i++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			n.End = p.i
			return n, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.Elems = append(n.Elems, v)
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

func (p *parser) string() (*Node, error) {
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
			return &Node{Kind: '"', Start: start, End: p.i, Str: s}, nil
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

func (p *parser) scalar() (*Node, error) {
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
	return &Node{Kind: 'v', Start: start, End: p.i}, nil
}

package policy

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxArgsDepth bounds how deeply a call's arguments may nest. Arguments
// nested deeper are unreadable: conditions cannot be evaluated on them
// (see Decide), and their digest is the raw one.
const MaxArgsDepth = 128

// ArgsDigest is a stable hash of a tool call's arguments: "sha256:" and the
// hex SHA-256 of their canonical JSON. Two calls get the same digest when
// their arguments are the same JSON value, whatever the key order or the
// white space; an approval is bound to it.
//
// The canonical JSON is RFC 8785 (JCS) with one difference: a number keeps
// the text it was written with ("1", "1.0" and "1e0" are three digests).
// The bridge never rewrites a number on its way to the server, and a
// server may read 1 and 1.0 differently (an integer field refuses 1.0), so
// an approval of one must not cover the other. In detail:
//   - object members sorted by key, compared as UTF-8 bytes (code point order);
//   - no white space;
//   - strings decoded (so "\u0041" and "A" are the same) and written back
//     with only '"', '\\' and control characters escaped: \b \f \n \r \t, the
//     other controls as \u00xx;
//   - numbers, true, false and null as written.
//
// Absent arguments (raw empty) digest as {}. Arguments that are not a
// readable JSON object (malformed, an array, null, a duplicate key,
// invalid UTF-8, nested deeper than MaxArgsDepth) digest as "sha256-raw:"
// and the SHA-256 of the bytes exactly as given, so they never share a
// digest with any readable arguments.
func ArgsDigest(raw []byte) string {
	if isCanonical(raw) {
		// Already canonical: the bytes are what the reader would write.
		return digestString("sha256:", sha256.Sum256(raw))
	}
	a := readArgs(raw, true)
	return a.digest()
}

// CanonicalArgs returns the canonical JSON that ArgsDigest hashes, or an
// error saying why the arguments are not a readable JSON object.
func CanonicalArgs(raw []byte) ([]byte, error) {
	a := readArgs(raw, true)
	if a.fault != nil {
		return nil, a.fault
	}
	return a.canon, nil
}

// args are a call's arguments, read once: the value conditions see, the
// canonical JSON, or why they could not be read.
type args struct {
	raw   []byte
	value map[string]any
	canon []byte
	fault error
}

func (a *args) digest() string {
	if a.fault != nil {
		return digestString("sha256-raw:", sha256.Sum256(a.raw))
	}
	return digestString("sha256:", sha256.Sum256(a.canon))
}

// errArgsNotObject and the others are why arguments are unreadable; they
// never quote the arguments.
var (
	errArgsNotObject = errors.New("the arguments are not a JSON object")
	errArgsTrailing  = errors.New("the arguments have bytes after the JSON value")
	errArgsDepth     = fmt.Errorf("the arguments nest deeper than %d levels", MaxArgsDepth)
	errArgsUTF8      = errors.New("the arguments hold invalid UTF-8")
)

// argsSyntaxError says where the arguments stop being JSON.
type argsSyntaxError struct {
	Offset int
	What   string
}

func (e *argsSyntaxError) Error() string {
	return fmt.Sprintf("the arguments are not JSON: %s at byte %d", e.What, e.Offset)
}

// duplicateKeyError says the arguments repeat a key. Readers disagree on
// which value wins, so the policy could see one and the server the other.
// It names where, by keys and indexes (structure, never a value).
type duplicateKeyError struct {
	// segs are the path's steps, innermost last: `."key"` or `[2]`.
	segs []string
}

func (e *duplicateKeyError) Error() string {
	return fmt.Sprintf("the arguments repeat the key at $%s; JSON readers disagree on which value wins", strings.Join(e.segs, ""))
}

// within prefixes the path with one step, as the error unwinds.
func within(err error, seg string) error {
	if d, ok := err.(*duplicateKeyError); ok {
		d.segs = append([]string{seg}, d.segs...)
	}
	return err
}

func keySeg(k string) string { return "." + strconv.Quote(truncate(k, 64)) }

// readArgs reads raw as a JSON object. With canon it also builds the
// canonical JSON.
func readArgs(raw []byte, canon bool) args {
	a := args{raw: raw}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		a.value = map[string]any{}
		a.canon = []byte("{}")
		return a
	}
	p := argParser{s: raw, canon: canon}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		a.fault = errArgsNotObject
		return a
	}
	v, err := p.value(0)
	if err == nil {
		p.skipSpace()
		if p.i != len(p.s) {
			err = errArgsTrailing
		}
	}
	if err != nil {
		a.fault = err
		return a
	}
	a.value = v.(map[string]any)
	a.canon = p.out
	return a
}

// argParser is a strict JSON reader (RFC 8259) that yields the values CEL
// conditions see and, optionally, writes the canonical form as it goes.
//
// Values: an object is map[string]any, an array []any, a string string, a
// boolean bool, null nil. A number written as an integer that fits int64
// is int64 (a CEL int); any other number is float64 (a CEL double), and one
// a double cannot hold (beyond ±1.8e308, or non-zero but rounding to 0)
// makes the arguments unreadable rather than change its meaning.
type argParser struct {
	s     []byte
	i     int
	canon bool
	out   []byte
}

func (p *argParser) fail(what string) error {
	return &argsSyntaxError{Offset: p.i, What: what}
}

func (p *argParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *argParser) value(depth int) (any, error) {
	if depth >= MaxArgsDepth {
		return nil, errArgsDepth
	}
	p.skipSpace()
	if p.i >= len(p.s) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		if p.canon {
			p.out = appendCanonString(p.out, s)
		}
		return s, nil
	case c == 't':
		return true, p.word("true")
	case c == 'f':
		return false, p.word("false")
	case c == 'n':
		return nil, p.word("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	return nil, p.fail("unexpected character")
}

func (p *argParser) word(w string) error {
	if !bytes.HasPrefix(p.s[p.i:], []byte(w)) {
		return p.fail("unexpected character")
	}
	p.i += len(w)
	if p.canon {
		p.out = append(p.out, w...)
	}
	return nil
}

// member is one object member's key and the span of its canonical value.
type member struct {
	key        string
	start, end int
}

func (p *argParser) object(depth int) (any, error) {
	p.i++ // {
	m := map[string]any{}
	var members []member
	base := len(p.out)
	for first := true; ; first = false {
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == '}' && first {
			p.i++
			break
		}
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.fail("expected a member name")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		if _, dup := m[k]; dup {
			return nil, &duplicateKeyError{segs: []string{keySeg(k)}}
		}
		start := len(p.out)
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, within(err, keySeg(k))
		}
		m[k] = v
		if p.canon {
			members = append(members, member{key: k, start: start, end: len(p.out)})
		}
		if more, err := p.next('}'); err != nil || !more {
			if err != nil {
				return nil, err
			}
			break
		}
	}
	if p.canon {
		p.out = canonObject(p.out, base, members)
	}
	return m, nil
}

// next reads what follows a member or an element: ',' (more follows) or
// the closing byte.
func (p *argParser) next(closing byte) (more bool, err error) {
	p.skipSpace()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ',':
			p.i++
			return true, nil
		case closing:
			p.i++
			return false, nil
		}
	}
	return false, p.fail(fmt.Sprintf("expected ',' or '%c'", closing))
}

// canonObject rewrites out[base:], the members' canonical values one after
// another, as the canonical object: members sorted by key.
func canonObject(out []byte, base int, members []member) []byte {
	vals := append([]byte(nil), out[base:]...)
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out = append(out[:base], '{')
	for i, mb := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendCanonString(out, mb.key)
		out = append(out, ':')
		out = append(out, vals[mb.start-base:mb.end-base]...)
	}
	return append(out, '}')
}

func (p *argParser) array(depth int) (any, error) {
	p.i++ // [
	var out []any
	if p.canon {
		p.out = append(p.out, '[')
	}
	for first := true; ; first = false {
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == ']' && first {
			p.i++
			break
		}
		if !first && p.canon {
			p.out = append(p.out, ',')
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, within(err, "["+strconv.Itoa(len(out))+"]")
		}
		out = append(out, v)
		if more, err := p.next(']'); err != nil || !more {
			if err != nil {
				return nil, err
			}
			break
		}
	}
	if p.canon {
		p.out = append(p.out, ']')
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// str reads a JSON string and returns its decoded value.
func (p *argParser) str() (string, error) {
	p.i++ // "
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			s := p.s[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return "", errArgsUTF8
			}
			return string(s), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail("control character in a string")
		}
		p.i++
	}
	buf := append([]byte(nil), p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return "", errArgsUTF8
			}
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.s) {
			break
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A surrogate must be the first of a pair; a lone one is
				// not a character, and readers replace it differently.
				if r >= 0xDC00 || !bytes.HasPrefix(p.s[p.i:], []byte(`\u`)) {
					return "", errArgsUTF8
				}
				p.i += 2
				r2, ok := p.hex4()
				if !ok {
					return "", p.fail("bad \\u escape")
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", errArgsUTF8
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.fail("bad escape")
		}
	}
	return "", p.fail("unterminated string")
}

func (p *argParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, c := range p.s[p.i : p.i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *argParser) number() (any, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.fail("bad number")
	}
	integer := true
	if p.i < len(p.s) && p.s[p.i] == '.' {
		integer = false
		p.i++
		if digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		integer = false
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	text := string(p.s[start:p.i])
	if p.canon {
		p.out = append(p.out, text...)
	}
	if integer {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("the arguments hold a number beyond what a double can hold (±1.8e308)")
	}
	if f == 0 && nonZeroMantissa(text) {
		return nil, fmt.Errorf("the arguments hold a non-zero number too small for a double (it would read as 0)")
	}
	return f, nil
}

// appendCanonString writes s as a canonical JSON string (RFC 8785 §3.2.2.2).
func appendCanonString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"':
			out = append(out, '\\', '"')
		case '\\':
			out = append(out, '\\', '\\')
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			const hexd = "0123456789abcdef"
			out = append(out, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// truncate cuts s to at most n bytes on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// nonZeroMantissa reports whether the digits of a JSON number before its
// exponent hold a non-zero digit.
func nonZeroMantissa(text string) bool {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == 'e' || c == 'E':
			return false
		case '1' <= c && c <= '9':
			return true
		}
	}
	return false
}

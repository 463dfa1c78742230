package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Scanner reads a JSON-RPC message's envelope from its bytes as they pass,
// in memory bounded by the members it captures, whatever the message's
// size or depth. It tokenizes the top-level object and the objects of its
// params, result and error members exactly; deeper values are skipped by
// tracking only strings and brackets, so nesting costs a counter, not a
// stack. It is an io.Writer: write the message's bytes (in pieces of any
// size), then call Finish.
//
// A Scanner is not a validator: beyond the second level it checks nothing
// but string and bracket structure. It reports the first syntax error it
// meets at the levels it reads; after one, it reads nothing more and
// passes the rest of the bytes to Out unchanged.
type Scanner struct {
	opts ScanOptions
	env  Envelope
	err  error
	werr error
	n    int64

	state uint8
	depth int
	// top is the current top-level member's name, sub the current member
	// of params, result or error, in is which of those the scanner is in.
	top, sub, in string

	inString, isKey bool
	bs              int // backslashes ending the string's last piece
	keyBuf          [maxKey + 1]byte
	keyLen          int
	literal         bool

	skip     bool // inside a value deeper than the levels read
	skipBase int  // the depth at which the skipped value ends
	topStart int64

	cap struct {
		active  bool
		path    string
		limit   int
		buf     []byte
		start   int // where the capture starts in the current piece
		depth   int // the depth of the object the member is in
		rewrite bool
	}
	emitFrom int // where emission resumes in the current piece; -1 holds
}

// Scanner states at the levels it reads.
const (
	stValue    uint8 = iota // a value is expected
	stKeyOrEnd              // after '{': a member name or '}'
	stKey                   // after ',' in an object: a member name
	stColon                 // after a member name
	stAfter                 // after a value: ',' or '}'
	stDone                  // the top-level value ended
	stBroken                // a syntax error: nothing more is read
)

// NewScanner returns a Scanner with the given options.
func NewScanner(o ScanOptions) *Scanner {
	return &Scanner{opts: o}
}

// Envelope returns what was read so far.
func (s *Scanner) Envelope() *Envelope { return &s.env }

// Err returns the first syntax error met, or nil.
func (s *Scanner) Err() error { return s.err }

// Done reports whether the top-level value has ended.
func (s *Scanner) Done() bool { return s.state == stDone }

// Write scans p and passes it on to Out. It fails only when Out does.
func (s *Scanner) Write(p []byte) (int, error) {
	if s.werr != nil {
		return 0, s.werr
	}
	s.emitFrom = 0
	if s.cap.active {
		s.cap.start = 0
		if s.cap.rewrite {
			s.emitFrom = -1 // the capture holds its bytes back
		}
	}
	for i := 0; i < len(p); {
		switch {
		case s.state == stBroken:
			i = len(p)
		case s.inString:
			i = s.stringBytes(p, i)
		case s.skip:
			i = s.skipBytes(p, i)
		default:
			i = s.exactByte(p, i)
		}
	}
	if s.cap.active {
		s.capAppend(p, len(p))
	}
	if s.emitFrom >= 0 {
		s.emit(p[s.emitFrom:])
	}
	s.n += int64(len(p))
	if s.werr != nil {
		return len(p), s.werr
	}
	return len(p), nil
}

// Finish ends the message: it writes what a pending capture held back and
// reports a message that ended early or not at all as an object.
func (s *Scanner) Finish() error {
	if s.cap.active {
		if s.cap.rewrite {
			s.emit(s.cap.buf)
		}
		s.cap.active = false
	}
	if s.state != stDone && s.err == nil {
		switch {
		case s.n == 0 || (s.depth == 0 && s.state == stValue && !s.skip && !s.literal):
			s.err = fmt.Errorf("the message is empty")
		default:
			s.err = fmt.Errorf("the message ends after %d bytes, inside its JSON", s.n)
		}
	}
	if s.werr != nil {
		return s.werr
	}
	return nil
}

func (s *Scanner) emit(b []byte) {
	if s.opts.Out == nil || len(b) == 0 || s.werr != nil {
		return
	}
	if _, err := s.opts.Out.Write(b); err != nil {
		s.werr = err
	}
}

func (s *Scanner) fail(i int, c byte, what string) {
	s.err = fmt.Errorf("invalid JSON at byte %d: %s, found %q", s.n+int64(i), what, c)
	s.state = stBroken
	if s.cap.active && s.cap.rewrite {
		s.emit(s.cap.buf)
		s.emitFrom = s.cap.start
	}
	s.cap.active = false
}

// stringBytes scans string content from p[i] and returns where scanning
// goes on.
func (s *Scanner) stringBytes(p []byte, i int) int {
	for {
		j := bytes.IndexByte(p[i:], '"')
		if j < 0 {
			t := trailingBackslashes(p[i:])
			if t == len(p)-i {
				s.bs += t
			} else {
				s.bs = t
			}
			s.keyAppend(p[i:])
			return len(p)
		}
		q := i + j
		b := trailingBackslashes(p[i:q])
		if b == q-i {
			b += s.bs
		}
		if b%2 == 1 { // an escaped quote
			s.keyAppend(p[i : q+1])
			s.bs = 0
			i = q + 1
			continue
		}
		s.keyAppend(p[i:q])
		s.inString, s.bs = false, 0
		s.stringEnded(p, q+1)
		return q + 1
	}
}

func trailingBackslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}

func (s *Scanner) keyAppend(b []byte) {
	if s.isKey && s.keyLen <= maxKey {
		s.keyLen += copy(s.keyBuf[s.keyLen:], b)
		if s.keyLen == len(s.keyBuf) && len(b) > 0 {
			s.keyLen = maxKey + 1 // over: no name the Scanner reads
		}
	}
}

// key returns the member name read, as written.
func (s *Scanner) key() []byte { return s.keyBuf[:s.keyLen] }

// stringEnded handles the end of a string at end (exclusive) in p.
func (s *Scanner) stringEnded(p []byte, end int) {
	switch {
	case s.skip:
	case s.isKey:
		s.isKey = false
		if s.depth == 1 {
			name := topKey(s.key())
			s.top = name
			if (name == "id" && s.seen("id")) || (name == "method" && s.seen("method")) {
				s.env.Duplicate = name
			}
		} else {
			s.sub = s.subPath(s.key())
		}
		s.state = stColon
	default:
		s.valueEnded(p, end)
	}
}

// topKey returns the name of a top-level member the Scanner reads, without
// allocating, or "" for one it does not.
func topKey(raw []byte) string {
	switch string(raw) {
	case "id":
		return "id"
	case "method":
		return "method"
	case "jsonrpc":
		return "jsonrpc"
	case "params":
		return "params"
	case "result":
		return "result"
	case "error":
		return "error"
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		if k := decodeKey(raw); k != string(raw) {
			return topKey([]byte(k))
		}
	}
	return ""
}

// subPath returns the path ("params._meta") of a member of params, result
// or error that the options capture, or "" for one they do not.
func (s *Scanner) subPath(raw []byte) string {
	if len(s.opts.Capture) == 0 {
		return ""
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		raw = []byte(decodeKey(raw))
	}
	var buf [maxKey + 8]byte
	k := append(append(append(buf[:0], s.in...), '.'), raw...)
	if _, ok := s.opts.Capture[string(k)]; ok {
		return string(k)
	}
	return ""
}

// seen reports whether a top-level id or method was already read.
func (s *Scanner) seen(name string) bool {
	if name == "id" {
		return s.env.ID != nil
	}
	return s.env.Method != ""
}

func decodeKey(raw []byte) string {
	if len(raw) > maxKey {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var k string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &k) != nil {
		return ""
	}
	return k
}

// decodeString returns the JSON string v decodes to, or "" when v is not
// a string.
func decodeString(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1])
	}
	var m string // escapes, or invalid UTF-8 (which decodes to U+FFFD)
	json.Unmarshal(v, &m)
	return m
}

// structural marks the bytes skipped values are tracked by.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// skipBytes scans a value deeper than the levels read.
func (s *Scanner) skipBytes(p []byte, i int) int {
	for i < len(p) {
		for i < len(p) && !structural[p[i]] {
			i++
		}
		if i == len(p) {
			return i
		}
		switch p[i] {
		case '"':
			s.inString, s.isKey, s.bs = true, false, 0
			return i + 1
		case '{', '[':
			s.depth++
			if s.depth > s.env.MaxDepth {
				s.env.MaxDepth = s.depth
			}
		default:
			s.depth--
			if s.depth == s.skipBase {
				s.skip = false
				if s.depth == 0 {
					s.state = stDone
					return i + 1
				}
				s.valueEnded(p, i+1)
				return i + 1
			}
		}
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isTerminator(c byte) bool { return isSpace(c) || c == ',' || c == '}' || c == ']' }

// exactByte scans one byte at the levels read and returns where scanning
// goes on.
func (s *Scanner) exactByte(p []byte, i int) int {
	c := p[i]
	if s.literal {
		if !isTerminator(c) {
			return i + 1
		}
		s.literal = false
		s.valueEnded(p, i)
		if s.state == stBroken {
			return len(p)
		}
	}
	if isSpace(c) {
		return i + 1
	}
	switch s.state {
	case stValue:
		s.beginValue(p, i, c)
	case stKeyOrEnd, stKey:
		switch {
		case c == '"':
			s.inString, s.isKey, s.bs, s.keyLen = true, true, 0, 0
		case c == '}' && s.state == stKeyOrEnd:
			s.closeObject(p, i)
		default:
			s.fail(i, c, "want a member name")
		}
	case stColon:
		if c != ':' {
			s.fail(i, c, "want ':' after a member name")
		} else {
			s.state = stValue
		}
	case stAfter:
		switch c {
		case ',':
			s.state = stKey
		case '}':
			s.closeObject(p, i)
		default:
			s.fail(i, c, "want ',' or '}'")
		}
	case stDone:
		s.fail(i, c, "want nothing after the message")
	}
	return i + 1
}

// path names the member whose value begins: "id", "params._meta", or ""
// for one the Scanner does not read.
func (s *Scanner) path() string {
	if s.depth == 1 {
		return s.top
	}
	return s.sub
}

// beginValue starts a value at p[i] = c.
func (s *Scanner) beginValue(p []byte, i int, c byte) {
	if s.depth == 0 {
		switch c {
		case '{':
			s.depth, s.env.MaxDepth, s.state = 1, 1, stKeyOrEnd
		case '[':
			s.env.Batch = true
			s.depth, s.env.MaxDepth, s.skip, s.skipBase = 1, 1, true, 0
		default:
			s.fail(i, c, "a JSON-RPC message is an object or a batch (array)")
		}
		return
	}
	path := s.path()
	if s.depth == 1 {
		s.topStart = s.n + int64(i)
		switch path {
		case "params":
			s.env.Params = true
		case "result":
			s.env.Result = true
		case "error":
			s.env.Error = true
		}
	}
	if path != "" {
		if limit, ok := s.captureLimit(path); ok {
			s.startCapture(p, i, path, limit)
		}
	}
	switch c {
	case '{', '[':
		if s.depth == 1 && c == '{' && (path == "params" || path == "result" || path == "error") {
			s.in, s.depth, s.state = path, 2, stKeyOrEnd
			if s.env.MaxDepth < 2 {
				s.env.MaxDepth = 2
			}
			return
		}
		s.skip, s.skipBase = true, s.depth
		s.depth++
		if s.depth > s.env.MaxDepth {
			s.env.MaxDepth = s.depth
		}
	case '"':
		s.inString, s.isKey, s.bs = true, false, 0
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n':
		s.literal = true
	default:
		s.fail(i, c, "want a value")
	}
}

// captureLimit says whether the value at path is captured, and its limit.
func (s *Scanner) captureLimit(path string) (int, bool) {
	if s.depth == 1 && (path == "id" || path == "method" || path == "jsonrpc") {
		if l, ok := s.opts.Capture[path]; ok {
			return l, true
		}
		return MaxEnvelopeMember, true
	}
	l, ok := s.opts.Capture[path]
	return l, ok
}

func (s *Scanner) startCapture(p []byte, i int, path string, limit int) {
	c := &s.cap
	c.active, c.path, c.limit, c.buf, c.start, c.depth = true, path, limit, c.buf[:0], i, s.depth
	c.rewrite = s.opts.Rewrite != nil && s.opts.Rewritable[path]
	if c.rewrite && s.emitFrom >= 0 {
		s.emit(p[s.emitFrom:i])
		s.emitFrom = -1
	}
}

// capAppend adds p[cap.start:end] to the capture, or gives it up when it
// would pass its limit (a held rewrite is then written unchanged).
func (s *Scanner) capAppend(p []byte, end int) bool {
	c := &s.cap
	if len(c.buf)+end-c.start > c.limit {
		s.env.Over = append(s.env.Over, c.path)
		if c.rewrite {
			s.emit(c.buf)
			s.emitFrom = c.start
		}
		c.active = false
		return false
	}
	c.buf = append(c.buf, p[c.start:end]...)
	return true
}

// valueEnded ends a value at the levels read at end (exclusive) in p.
func (s *Scanner) valueEnded(p []byte, end int) {
	s.state = stAfter
	if s.depth == 0 {
		s.state = stDone
	}
	if s.depth == 1 {
		s.noteSpan(end)
	}
	c := &s.cap
	if !c.active || c.depth != s.depth {
		return
	}
	var v json.RawMessage
	if s.opts.Alias && c.start >= 0 && len(c.buf) == 0 {
		v = p[c.start:end:end]
	} else if s.capAppend(p, end) {
		v = append(json.RawMessage(nil), c.buf...)
	} else {
		return
	}
	c.active = false
	switch c.path {
	case "id":
		if s.depth == 1 {
			s.env.ID = v
		}
	case "method":
		if s.depth == 1 {
			s.env.Method = decodeString(v)
		}
	}
	if s.depth > 1 {
		if s.env.Members == nil {
			s.env.Members = map[string]json.RawMessage{}
		}
		s.env.Members[c.path] = v
	}
	if c.rewrite {
		s.emit(s.opts.Rewrite(c.path, v, &s.env))
		s.emitFrom = end
	}
}

// noteSpan records where the top-level member's value that ends at end
// (exclusive) in the current piece lies.
func (s *Scanner) noteSpan(end int) {
	sp := Span{s.topStart, s.n + int64(end)}
	switch s.top {
	case "id":
		s.env.IDAt = sp
	case "method":
		s.env.MethodAt = sp
	case "params":
		s.env.ParamsAt = sp
	case "result":
		s.env.ResultAt = sp
	case "error":
		s.env.ErrorAt = sp
	}
}

// closeObject handles '}' at p[i] at the levels read.
func (s *Scanner) closeObject(p []byte, i int) {
	s.depth--
	if s.depth == 0 {
		s.state = stDone
		return
	}
	s.in, s.sub = "", ""
	s.valueEnded(p, i+1)
}

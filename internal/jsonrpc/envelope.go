package jsonrpc

import (
	"encoding/json"
	"io"
	"sync"
)

// Envelope is what a Scanner read of one message: the members a proxy
// needs to route it, never its body.
type Envelope struct {
	// ID is the id member as it was written, nil when absent or over
	// MaxEnvelopeMember.
	ID json.RawMessage
	// Method is the method member, "" when absent or not a string.
	Method string
	// Params, Result and Error say which of those members are present.
	Params, Result, Error bool
	// Batch is true for an array (a JSON-RPC batch); nothing inside it is
	// read.
	Batch bool
	// Members holds the captured members of params, result and error by
	// path, as ScanOptions.Capture named them ("params._meta").
	Members map[string]json.RawMessage
	// Over lists the captured paths whose value was over its limit; their
	// value is not in Members and was not rewritten.
	Over []string
	// Duplicate names a top-level id or method member that appears twice
	// (JSON parsers disagree on which one wins), or "".
	Duplicate string
	// MaxDepth is the deepest nesting seen: 1 for a flat object.
	MaxDepth int
	// Where the top-level members' values are in the bytes written,
	// counted from the first byte (a zero Span: absent), so a caller that
	// holds the whole message reads them without a copy.
	IDAt, MethodAt, ParamsAt, ResultAt, ErrorAt Span
}

// Span is where a value lies in a message: bytes [Start, End).
type Span struct{ Start, End int64 }

// Of returns the bytes of the span in msg, or nil for an absent one.
func (s Span) Of(msg []byte) []byte {
	if s.End == 0 || s.End > int64(len(msg)) {
		return nil
	}
	return msg[s.Start:s.End]
}

// HasID reports whether the message carries a non-null id.
func (e *Envelope) HasID() bool { return HasID(e.ID) }

// IsRequest reports whether the message is a request: a method and an id.
func (e *Envelope) IsRequest() bool { return e.Method != "" && e.HasID() }

// IsNotification reports whether the message is a notification.
func (e *Envelope) IsNotification() bool { return e.Method != "" && !e.HasID() }

// IsResponse reports whether the message is a response.
func (e *Envelope) IsResponse() bool { return e.Method == "" && (e.Result || e.Error) }

// MaxEnvelopeMember bounds the id, method and jsonrpc members a Scanner
// keeps; a longer one is not captured.
const MaxEnvelopeMember = 64 << 10

// maxKey bounds the raw bytes of a member name the Scanner decodes: enough
// for every name it looks for, even written entirely in \u escapes.
const maxKey = 128

// ScanOptions configure a Scanner. The zero value reads the envelope only
// and writes nothing.
type ScanOptions struct {
	// Out receives the message's bytes as they are scanned, with any
	// rewritten member replaced; nil writes nothing.
	Out io.Writer
	// Capture names members of params, result and error to keep, as
	// "params._meta", with the most bytes to keep of each. The top-level
	// "id" may be named too, to rewrite it.
	Capture map[string]int
	// Rewrite, when set, is called as each captured member named in
	// Rewritable ends, with the envelope read so far; what it returns is
	// written to Out instead of the member's value. It is not called for a
	// member over its limit, which passes unchanged.
	Rewrite    func(path string, value []byte, env *Envelope) []byte
	Rewritable map[string]bool
	// Alias makes a captured value a slice of the bytes written instead of
	// a copy, with no limit: for a whole message written in one Write and
	// kept while the envelope is used.
	Alias bool
}

// Scan reads the envelope of a whole message. It allocates nothing but
// what it captures (and, with Alias, not even that).
func Scan(msg []byte, o ScanOptions) (Envelope, error) {
	s := scanners.Get().(*Scanner)
	defer scanners.Put(s)
	*s = Scanner{opts: o}
	if _, err := s.Write(msg); err != nil {
		return s.env, err
	}
	if err := s.Finish(); err != nil {
		return s.env, err
	}
	return s.env, s.err
}

// scanners are the Scanners Scan reuses: one per message would be the
// proxy's largest allocation.
var scanners = sync.Pool{New: func() any { return new(Scanner) }}

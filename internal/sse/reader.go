package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultMaxEventSize is the limit a zero Options.MaxEventSize means:
// 16 MiB, above any JSON-RPC message the bridge relays in practice.
const DefaultMaxEventSize = 16 << 20

// keepBuffer is the capacity up to which the line buffer is kept between
// lines; one grown past it by a long line is dropped, so a single large
// event does not pin its memory for the rest of a long-lived stream.
const keepBuffer = 64 << 10

// Options configure a Reader. The zero value is ready to use.
type Options struct {
	// MaxEventSize bounds what one event may hold: a line longer than it,
	// or an event whose data buffer grows past it, stops the stream with a
	// *TooLargeError. Zero means DefaultMaxEventSize. A Reader holds a
	// few times this at most: a line, the data, the event type, the id.
	MaxEventSize int
	// LastEventID seeds the last event ID, for a stream that resumes an
	// earlier one (the value sent as Last-Event-ID). "" means none.
	LastEventID string
}

// Event is one dispatched event.
type Event struct {
	// ID is the stream's last event ID when the event was dispatched. It
	// persists from event to event until the stream sets another, so it is
	// not necessarily this event's own id field.
	ID string
	// Type is the event type: the event field, or "message" when the event
	// named none.
	Type string
	// Data is the data lines joined with LF, without the final LF. It
	// never contains a CR, and it belongs to the caller.
	Data []byte
}

// TooLargeError reports an event, or one of its lines, over the limit the
// Reader was given. The stream is unusable after it.
type TooLargeError struct {
	// Limit is the MaxEventSize in force, in bytes.
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("an event of the stream is over the %d-byte limit; the stream was stopped there", e.Limit)
}

// ErrPartialEvent is wrapped by the error Next returns when the stream
// ends inside an event (after one of its fields, before the blank line
// that would dispatch it). The partial event is discarded, as the spec
// says; the error tells the caller the stream did not end cleanly.
var ErrPartialEvent = errors.New("the event stream ended inside an event; the partial event was discarded")

// Reader reads events from a text/event-stream. It is not safe for
// concurrent use.
type Reader struct {
	br  *bufio.Reader
	max int

	line    []byte // a line that spans more than the buffered input
	started bool   // the leading byte order mark has been looked at
	skipLF  bool   // the last line ended with CR: an LF right after belongs to it
	pending bool   // a field was seen since the last dispatch
	err     error  // sticky: the reader stops at the first error

	data      []byte // the data buffer
	eventType string // the event type buffer
	lastType  string // the last event type read, kept to reuse its string
	idBuf     string // the last event ID buffer
	lastID    string // the last event ID, set at each dispatch
	retry     time.Duration
	hasRetry  bool
}

// NewReader returns a Reader of the event stream r.
func NewReader(r io.Reader, o Options) *Reader {
	if o.MaxEventSize <= 0 {
		o.MaxEventSize = DefaultMaxEventSize
	}
	return &Reader{br: bufio.NewReaderSize(r, 32<<10), max: o.MaxEventSize, idBuf: o.LastEventID, lastID: o.LastEventID}
}

// LastEventID returns the last event ID as of the last blank line: the
// value to resume the stream with (Last-Event-ID). It is updated even by
// a blank line that dispatches nothing.
func (r *Reader) LastEventID() string { return r.lastID }

// Retry returns the reconnection time the stream set with its last valid
// retry field, and false when it set none.
func (r *Reader) Retry() (time.Duration, bool) { return r.retry, r.hasRetry }

// Next returns the next event. At the end of the stream it returns io.EOF,
// or an error wrapping ErrPartialEvent when the stream ended inside an
// event. After an error, every later call returns the same error.
func (r *Reader) Next() (Event, error) {
	for r.err == nil {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			break
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if err := r.processLine(line); err != nil {
			r.err = err
		}
	}
	return Event{}, r.err
}

// dispatch ends the current event at a blank line: it commits the last
// event ID and yields the event if the data buffer holds anything.
func (r *Reader) dispatch() (Event, bool) {
	r.lastID = r.idBuf
	r.pending = false
	if len(r.data) == 0 {
		r.eventType = ""
		return Event{}, false
	}
	ev := Event{ID: r.lastID, Type: r.eventType, Data: r.data[:len(r.data)-1]}
	if ev.Type == "" {
		ev.Type = "message"
	}
	r.data, r.eventType = nil, "" // the event keeps the buffer
	return ev, true
}

// processLine applies one non-empty line to the buffers.
func (r *Reader) processLine(line []byte) error {
	if line[0] == ':' {
		return nil // a comment
	}
	r.pending = true
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "event":
		if string(value) != r.lastType { // a stream's types repeat: reuse the string
			r.lastType = string(value)
		}
		r.eventType = r.lastType
	case "data":
		if len(r.data)+len(value)+1 > r.max {
			return &TooLargeError{Limit: r.max}
		}
		if r.data == nil {
			r.data = make([]byte, 0, len(value)+1)
		}
		r.data = append(append(r.data, value...), '\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.idBuf {
			r.idBuf = string(value)
		}
	case "retry":
		if d, ok := parseRetry(value); ok {
			r.retry, r.hasRetry = d, true
		}
	}
	return nil
}

// parseRetry reads a retry value: ASCII digits only, milliseconds. A value
// too large for a time.Duration is taken as the largest one.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms > (math.MaxInt64/int64(time.Millisecond)-9)/10 {
			ms = math.MaxInt64 / int64(time.Millisecond)
			continue
		}
		ms = ms*10 + int64(c-'0')
	}
	return time.Duration(ms) * time.Millisecond, true
}

// readLine returns the next line without its end (LF, CR or CRLF), decoded
// as UTF-8 with invalid sequences replaced. The slice is valid until the
// next call.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	if cap(r.line) > keepBuffer {
		r.line = nil
	}
	if err := r.start(); err != nil {
		return nil, err
	}
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return nil, r.endOfInput(err)
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		i := lineEnd(buf)
		n := len(buf)
		if i >= 0 {
			n = i
		}
		if len(r.line)+n > r.max {
			return nil, &TooLargeError{Limit: r.max}
		}
		if i < 0 {
			r.line = append(r.line, buf...)
			r.br.Discard(len(buf))
			continue
		}
		line := buf[:i]
		if len(r.line) > 0 {
			r.line = append(r.line, line...)
			line = r.line
		}
		r.skipLF = buf[i] == '\r'
		r.br.Discard(i + 1) // within the buffered bytes: buf stays valid
		if line = toValidUTF8(line); len(line) > r.max {
			return nil, &TooLargeError{Limit: r.max} // U+FFFD is 3 bytes
		}
		return line, nil
	}
}

// lineEnd returns the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	if lf < 0 {
		lf = len(b)
	}
	if cr := bytes.IndexByte(b[:lf], '\r'); cr >= 0 {
		return cr
	}
	if lf == len(b) {
		return -1
	}
	return lf
}

// start drops the one byte order mark a stream may begin with, and the LF
// of a CRLF whose CR ended the previous line. It reads no byte that the
// next line does not need anyway.
func (r *Reader) start() error {
	if !r.started {
		r.started = true
		const bom = "\uFEFF"
		for n := 1; n <= len(bom); n++ {
			b, err := r.br.Peek(n)
			if len(b) < n {
				if len(b) == 0 {
					return r.endOfInput(err)
				}
				break // a short stream: its bytes are a line
			}
			if b[n-1] != bom[n-1] {
				break
			}
			if n == len(bom) {
				r.br.Discard(n)
			}
		}
	}
	if r.skipLF {
		r.skipLF = false
		if b, err := r.br.Peek(1); len(b) == 1 && b[0] == '\n' {
			r.br.Discard(1)
		} else if len(b) == 0 {
			return r.endOfInput(err)
		}
	}
	return nil
}

// endOfInput turns the error that ended the input into Next's error.
func (r *Reader) endOfInput(err error) error {
	if err != io.EOF {
		return err
	}
	if r.pending || len(r.line) > 0 && r.line[0] != ':' {
		return fmt.Errorf("%w: %w", ErrPartialEvent, io.ErrUnexpectedEOF)
	}
	return io.EOF
}

// toValidUTF8 returns b with each maximal invalid UTF-8 subpart replaced
// by U+FFFD, as the UTF-8 decode of the Encoding Standard does; b itself
// when it is valid.
func toValidUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	var out strings.Builder
	out.Grow(len(b) + 8)
	for len(b) > 0 {
		if c, size := utf8.DecodeRune(b); c != utf8.RuneError || size > 1 {
			out.Write(b[:size])
			b = b[size:]
			continue
		}
		out.WriteRune(utf8.RuneError)
		b = b[invalidPrefix(b):]
	}
	return []byte(out.String())
}

// invalidPrefix returns the length of the maximal subpart at the start of
// b, which does not begin a valid UTF-8 sequence: a lead byte followed by
// the continuation bytes that could still have completed it. The bounds
// are the Encoding Standard's UTF-8 decoder's: E0 and F0 narrow the lower
// bound of the second byte (no overlong forms), ED and F4 its upper bound
// (no surrogates, nothing past U+10FFFF).
func invalidPrefix(b []byte) int {
	var need int
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c >= 0xE0 && c <= 0xEF:
		need = 2
	case c >= 0xF0 && c <= 0xF4:
		need = 3
	default:
		return 1
	}
	lo, hi := byte(0x80), byte(0xBF)
	switch b[0] {
	case 0xE0:
		lo = 0xA0
	case 0xED:
		hi = 0x9F
	case 0xF0:
		lo = 0x90
	case 0xF4:
		hi = 0x8F
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

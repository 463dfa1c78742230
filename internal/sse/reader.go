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
// 16 MiB. With Options.StreamAbove set it bounds only what a Reader
// holds besides an event's data (an id, an event type, a comment).
const DefaultMaxEventSize = 16 << 20

// keepBuffer is the capacity up to which the line buffer is kept between
// lines; one grown past it by a long line is dropped, so a single large
// event does not pin its memory for the rest of a long-lived stream.
const keepBuffer = 64 << 10

// Options configure a Reader. The zero value is ready to use.
type Options struct {
	// MaxEventSize bounds what one event may hold: a line other than
	// data longer than it, or an event whose data buffer grows past it
	// (unless StreamAbove hands the data over as a stream first), stops
	// the stream with a *TooLargeError. Zero means DefaultMaxEventSize. A
	// Reader holds a few times this at most: a line, the data, the event
	// type, the id.
	MaxEventSize int
	// LastEventID seeds the last event ID, for a stream that resumes an
	// earlier one (the value sent as Last-Event-ID). "" means none.
	LastEventID string
	// StreamAbove, when positive, is the size past which an event's data
	// is handed over as a stream rather than held: Next returns the event
	// with the data read so far in Data (a little over StreamAbove bytes)
	// and the rest in Rest. The data of an event is then unbounded, and
	// MaxEventSize bounds only the other fields and lines. Zero means
	// every event is held whole, up to MaxEventSize.
	StreamAbove int
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
	// never contains a CR, and it belongs to the caller. For an event
	// handed over as a stream (Rest is set) it is the data's first bytes.
	Data []byte
	// Rest is nil for an event held whole. For one whose data passed
	// Options.StreamAbove, it reads the rest of the data, decoded and
	// joined exactly as Data would have been, to io.EOF at the blank line
	// that ends the event; when the stream breaks or ends inside the
	// event, it returns the error Next would have (ErrPartialEvent at an
	// early end). It must be read before the next call to Next, which
	// otherwise reads and discards what is left.
	//
	// Such an event is handed over before its end, so ID and Type are
	// those its fields set before its data passed StreamAbove: an id
	// field after that point still sets the last event ID at the blank
	// line (LastEventID, once Rest returned io.EOF), and a retry field
	// still sets the reconnection time, but an event field there can no
	// longer change the type the caller was given.
	Rest io.Reader
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
// concurrent use, and neither is the Rest of the event it handed over
// last, which reads from the same stream.
type Reader struct {
	br     *bufio.Reader
	max    int
	stream int // Options.StreamAbove

	line    []byte // a line that spans more than the buffered input
	started bool   // the leading byte order mark has been looked at
	skipLF  bool   // the last line ended with CR: an LF right after belongs to it
	pending bool   // a field was seen since the last dispatch
	err     error  // sticky: the reader stops at the first error

	data      []byte     // the data buffer
	rest      *eventRest // the event being handed over as a stream, if any
	eventType string     // the event type buffer
	lastType  string     // the last event type read, kept to reuse its string
	idBuf     string     // the last event ID buffer
	lastID    string     // the last event ID, set at each dispatch
	retry     time.Duration
	hasRetry  bool
}

// NewReader returns a Reader of the event stream r.
func NewReader(r io.Reader, o Options) *Reader {
	if o.MaxEventSize <= 0 {
		o.MaxEventSize = DefaultMaxEventSize
	}
	return &Reader{br: bufio.NewReaderSize(r, readBuffer), max: o.MaxEventSize, stream: max(o.StreamAbove, 0),
		idBuf: o.LastEventID, lastID: o.LastEventID}
}

// readBuffer is the size of the Reader's input buffer: the most it reads
// from the stream at once, and so the most an event handed over as a
// stream may hold in Data beyond Options.StreamAbove.
const readBuffer = 32 << 10

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
	if r.rest != nil {
		io.Copy(io.Discard, r.rest) // its error, if any, is r.err
		r.rest = nil
	}
	for r.err == nil {
		data, err := r.atData()
		if err != nil {
			r.err = err
			break
		}
		if data {
			ev, streamed, err := r.readData()
			if err != nil {
				r.err = err
			} else if streamed {
				return ev, nil
			}
			continue
		}
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
	ev := Event{ID: r.lastID, Type: r.typeOrMessage(), Data: r.data[:len(r.data)-1]}
	r.data, r.eventType = nil, "" // the event keeps the buffer
	return ev, true
}

// typeOrMessage is the event type: the event type buffer, or "message".
func (r *Reader) typeOrMessage() string {
	if r.eventType == "" {
		return "message"
	}
	return r.eventType
}

// processLine applies one non-empty line other than a data line to the
// buffers.
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

// Data lines are read apart from the other lines, piece by piece as the
// input arrives, so that an event's data need never be held whole: the
// field name is told from the line's first bytes (atData), and its value
// is decoded in pieces that end where the decoder holds no partial
// sequence (valuePiece), which decode exactly as the whole line would.

// atData reports whether the next line is a data field ("data", then a
// colon or the line's end). If it is, it consumes the field name, the
// colon and the one space after it, leaving the value. It reads only the
// bytes it must to tell.
func (r *Reader) atData() (bool, error) {
	if err := r.start(); err != nil {
		return false, err
	}
	const name = "data"
	for n := 1; n <= len(name)+1; n++ {
		b, err := r.br.Peek(n)
		if len(b) < n {
			if err != nil && err != io.EOF {
				return false, err
			}
			return false, nil // the input ends first: readLine sees how
		}
		if n <= len(name) {
			if b[n-1] != name[n-1] {
				return false, nil
			}
			continue
		}
		switch b[n-1] {
		case ':':
			r.br.Discard(n)
			if sp, _ := r.br.Peek(1); len(sp) == 1 && sp[0] == ' ' {
				r.br.Discard(1)
			}
		case '\r', '\n':
			r.br.Discard(len(name)) // a data field with an empty value
		default:
			return false, nil // another field ("database: …")
		}
	}
	return true, nil
}

// readData reads the value of a data line into the data buffer. When the
// buffer passes Options.StreamAbove, it hands the event over as a stream
// instead (streamed is true).
func (r *Reader) readData() (ev Event, streamed bool, err error) {
	r.pending = true
	for {
		piece, ended, err := r.valuePiece()
		if err != nil {
			return Event{}, false, err
		}
		if r.stream == 0 && len(r.data)+len(piece)+1 > r.max {
			return Event{}, false, &TooLargeError{Limit: r.max}
		}
		r.data = r.grow(len(piece) + 1)
		r.data = append(r.data, piece...)
		if r.stream > 0 && len(r.data) > r.stream {
			ev := Event{ID: r.idBuf, Type: r.typeOrMessage(), Data: r.data}
			r.data = nil
			r.rest = &eventRest{r: r, inLine: !ended, lfOwed: ended}
			ev.Rest = r.rest
			return ev, true, nil
		}
		if ended {
			r.data = append(r.data, '\n')
			return Event{}, false, nil
		}
	}
}

// grow returns the data buffer with room for n more bytes. While it may
// yet be handed over as a stream, it never grows past the most it can
// hold then (StreamAbove and one read), so its growth allocates at most
// about twice that.
func (r *Reader) grow(n int) []byte {
	if len(r.data)+n <= cap(r.data) {
		return r.data
	}
	c := max(2*cap(r.data), len(r.data)+n)
	if r.stream > 0 {
		c = max(min(c, r.stream+readBuffer+1), len(r.data)+n)
	}
	return append(make([]byte, 0, c), r.data...)
}

// valuePiece returns the next piece of the current line, decoded as
// UTF-8, and whether the line ended with it (its end is then consumed).
// A piece ends where the input buffered so far does, short of a sequence
// that later bytes may complete. It is valid until the next read.
func (r *Reader) valuePiece() (piece []byte, ended bool, err error) {
	want := 1
	for {
		if r.br.Buffered() < want {
			if b, err := r.br.Peek(want); len(b) < want {
				return nil, false, r.endOfInput(err)
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if i := lineEnd(buf); i >= 0 {
			r.skipLF = buf[i] == '\r'
			r.br.Discard(i + 1) // within the buffered bytes: buf stays valid
			return toValidUTF8(buf[:i]), true, nil
		}
		n := completeUTF8(buf)
		if n == 0 {
			want = len(buf) + 1 // only the start of a sequence: read on
			continue
		}
		r.br.Discard(n)
		return toValidUTF8(buf[:n]), false, nil
	}
}

// eventRest is the Rest of an event handed over as a stream. It goes on
// reading the event's lines where readData stopped: the data lines'
// values go to the caller, joined with LF; the other lines apply to the
// Reader as Next applies them; the blank line ends it.
type eventRest struct {
	r      *Reader
	inLine bool   // inside a data line's value
	lfOwed bool   // a data line ended: its LF goes out if another follows
	pend   []byte // decoded bytes not yet read
	err    error  // io.EOF at the event's end, or what stopped it
}

// dataLF is the LF that joins two data lines.
var dataLF = []byte{'\n'}

func (e *eventRest) Read(p []byte) (int, error) {
	for len(e.pend) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		e.fill()
	}
	n := copy(p, e.pend)
	e.pend = e.pend[n:]
	return n, nil
}

// fill reads the next piece of the event: a piece of a data line's value,
// the LF between two data lines, or a line that is not data.
func (e *eventRest) fill() {
	r := e.r
	if e.inLine {
		piece, ended, err := r.valuePiece()
		if err != nil {
			e.fail(err)
			return
		}
		e.pend, e.inLine, e.lfOwed = piece, !ended, ended
		return
	}
	data, err := r.atData()
	if err != nil {
		e.fail(err)
		return
	}
	if data {
		if e.lfOwed {
			e.pend, e.lfOwed = dataLF, false
		}
		e.inLine = true
		return
	}
	line, err := r.readLine()
	switch {
	case err != nil:
		e.fail(err)
	case len(line) == 0:
		r.dispatch() // the data buffer is empty: it commits the id only
		e.err = io.EOF
	default:
		if err := r.processLine(line); err != nil {
			e.fail(err)
		}
	}
}

// fail stops the event and the Reader with err.
func (e *eventRest) fail(err error) {
	e.err = err
	e.r.err = err
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
	need := continuations(b[0])
	if need == 0 {
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

// continuations returns how many continuation bytes the lead byte c
// takes, or 0 when c leads no sequence (ASCII, a continuation byte, or a
// byte UTF-8 never uses).
func continuations(c byte) int {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1
	case c >= 0xE0 && c <= 0xEF:
		return 2
	case c >= 0xF0 && c <= 0xF4:
		return 3
	}
	return 0
}

// completeUTF8 returns the length of b without the sequence it may end
// with that later bytes could still complete: b can be decoded up to
// there as if it were all there is, and the rest decoded with the bytes
// that follow.
func completeUTF8(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c >= 0x80 && c <= 0xBF {
			continue // a continuation byte: its lead is further back
		}
		if need := continuations(c); k <= need && invalidPrefix(b[len(b)-k:]) == k {
			return len(b) - k
		}
		return len(b)
	}
	return len(b)
}

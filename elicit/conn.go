package elicit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// Frame is one JSON-RPC message (or batch) as it crosses a Conn: its
// bytes (whole, or a head and a stream of the rest), the request a server
// message relates to, whether more follows at once, and the whole-message
// limit of a streamed read. It is the type the remote transports
// (package upstream) share.
type Frame = jsonrpc.Frame

// Conn is one side of the proxy: a stream of JSON-RPC messages, framed,
// as go-sdk's Connection is. The proxy reads each side from one goroutine
// and writes to it from several.
type Conn interface {
	// Read returns the next message. It returns io.EOF when the peer has
	// gone. Close unblocks a Read in progress; ctx ends a Read only
	// where the Conn can stop waiting without losing a message.
	Read(ctx context.Context) (Frame, error)
	// Write writes one message: f.Head, then f.Rest to its end, framed
	// apart from every other message, even when f.Rest fails (that
	// error is returned). It is safe for concurrent use; each message
	// stays whole, in the order of the calls. Write does not start once
	// ctx is done.
	Write(ctx context.Context, f Frame) error
	// Close closes the stream, after what Write holds (More) is sent.
	Close() error
}

// DefaultMaxMessage is the size up to which a stdio stream reads a
// message whole; a larger one is read as a stream (Frame.Rest).
const DefaultMaxMessage = 4 << 20

// StreamConn frames JSON-RPC messages as newline-delimited JSON, the MCP
// stdio transport. It is a Conn.
type StreamConn struct {
	r     *bufio.Reader
	max   int
	close func() error
	// rest is the unread remainder of the last message Read handed over
	// as a stream; only the reading goroutine uses it.
	rest *lineRest

	w io.Writer

	// wmu guards the write state: messages queue in pending while one
	// caller writes, and that caller writes them all in one system call
	// (combining), so a burst costs one write instead of one per message.
	// Messages written with More wait in pending for the next write. A
	// stream being written counts as writing.
	wmu     sync.Mutex
	idle    *sync.Cond
	pending []byte
	spare   []byte
	writing bool
	werr    error
}

// NewStreamConn frames r and w. closer, if not nil, is called by Close.
// max is the size up to which a message is read whole (0 means
// DefaultMaxMessage); a larger one is handed over as a stream.
func NewStreamConn(r io.Reader, w io.Writer, closer func() error, max int) *StreamConn {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	c := &StreamConn{r: bufio.NewReaderSize(r, 64<<10), w: w, close: closer, max: max}
	c.idle = sync.NewCond(&c.wmu)
	return c
}

// Read returns the next non-empty line: whole when it is at most the
// limit, otherwise its first bytes and a stream of the rest (to the end
// of the line, without the newline). A whole message is a copy the caller
// may keep. ctx is checked before reading; Close unblocks a Read that
// waits for input.
func (c *StreamConn) Read(ctx context.Context) (Frame, error) {
	if err := ctx.Err(); err != nil {
		return Frame{}, err
	}
	if c.rest != nil {
		_, err := io.Copy(io.Discard, c.rest)
		c.rest = nil
		if err != nil {
			return Frame{}, err
		}
	}
	for {
		line, err := c.readLine()
		if err != nil {
			return Frame{}, err
		}
		if line.Rest != nil || len(line.Head) > 0 {
			line.More = line.Rest == nil && c.buffered()
			return line, nil
		}
	}
}

// readLine reads one line, trimmed; a line over the limit comes as a
// stream.
func (c *StreamConn) readLine() (Frame, error) {
	frag, err := c.r.ReadSlice('\n')
	if err == nil {
		// The usual case: the whole line is in the buffer. One copy, of
		// exactly the message.
		t := bytes.TrimSpace(frag)
		if len(t) > c.max {
			return Frame{Head: bytes.Clone(t), Rest: bytes.NewReader(nil), Limit: c.max}, nil
		}
		if len(t) == 0 {
			return Frame{}, nil
		}
		return Frame{Head: bytes.Clone(t)}, nil
	}
	line := append([]byte(nil), frag...)
	for {
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if len(line) > c.max {
				c.rest = &lineRest{r: c.r}
				return Frame{Head: line, Rest: c.rest, Limit: c.max}, nil
			}
		case err == io.EOF && len(bytes.TrimSpace(line)) > 0:
			return Frame{Head: bytes.TrimSpace(line)}, nil
		case err != nil:
			return Frame{}, err
		}
		frag, err = c.r.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			t := bytes.TrimSpace(line)
			if len(t) > c.max {
				// Read already, but over the limit all the same: a
				// stream whose head is all of it.
				return Frame{Head: t, Rest: bytes.NewReader(nil), Limit: c.max}, nil
			}
			return Frame{Head: t}, nil
		}
	}
}

// buffered reports whether a whole message is already buffered, so the
// next Read returns without a system call. A partial line does not count:
// the reader would block on it.
func (c *StreamConn) buffered() bool {
	n := c.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// lineRest reads the rest of a line from a bufio.Reader, up to and
// without its newline, which it consumes.
type lineRest struct {
	r    *bufio.Reader
	done bool
}

func (l *lineRest) Read(p []byte) (int, error) {
	if l.done {
		return 0, io.EOF
	}
	b, end, err := l.next(len(p))
	n := copy(p, b)
	l.consume(n, len(b), end)
	if n == 0 && l.done {
		return 0, io.EOF
	}
	return n, err
}

// WriteTo writes the rest of the line to w straight from the read buffer.
func (l *lineRest) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for !l.done {
		b, end, err := l.next(l.r.Size())
		if err != nil {
			if err == io.EOF {
				return total, nil
			}
			return total, err
		}
		n, werr := w.Write(b)
		total += int64(n)
		l.consume(len(b), len(b), end)
		if werr != nil {
			return total, werr
		}
	}
	return total, nil
}

// next returns up to max buffered bytes of the line (reading more when
// none are buffered) without consuming them, and whether the newline
// follows them. A line the input ends without a newline ends there
// (io.EOF, with the line done).
func (l *lineRest) next(max int) ([]byte, bool, error) {
	if l.r.Buffered() == 0 {
		if _, err := l.r.Peek(1); err != nil {
			l.done = true
			return nil, false, err
		}
	}
	b, _ := l.r.Peek(min(max, l.r.Buffered()))
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], true, nil
	}
	return b, false, nil
}

// consume discards n of the avail bytes next returned, and the newline
// after them when all were taken and end says one follows.
func (l *lineRest) consume(n, avail int, end bool) {
	if end && n == avail {
		n++
		l.done = true
	}
	l.r.Discard(n)
}

// Write writes f and a newline, after the messages queued before it.
// Messages stay whole and in call order; when another caller is writing,
// f joins its next system call and Write returns at once, and with
// f.More it waits in the queue for the next Write. A message relayed as
// a stream (f.Rest) is written while every other writer queues behind
// it. A write error is sticky and returned to every later caller.
func (c *StreamConn) Write(ctx context.Context, f Frame) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.Rest != nil {
		return c.writeStream(f)
	}
	c.wmu.Lock()
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	if len(f.Head) > 0 {
		c.pending = append(append(c.pending, f.Head...), '\n')
	}
	if f.More {
		c.wmu.Unlock()
		return nil
	}
	return c.drainLocked()
}

// writeStream writes one message as a stream: the messages queued before
// it first, then its head and the rest, then the newline, while every
// other writer queues behind it.
func (c *StreamConn) writeStream(f Frame) error {
	c.wmu.Lock()
	for c.writing {
		c.idle.Wait()
	}
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	c.writing = true
	queued := c.pending
	c.pending = c.spare[:0]
	c.spare = nil
	c.wmu.Unlock()

	sw := &stickyWriter{w: c.w}
	if len(queued) > 0 {
		sw.Write(queued)
	}
	if len(f.Head) > 0 {
		sw.Write(f.Head)
	}
	_, err := io.Copy(sw, f.Rest)
	if sw.err == nil {
		sw.Write([]byte{'\n'}) // ends the message even when its source broke
	}
	c.wmu.Lock()
	if sw.err != nil {
		c.werr, err = sw.err, sw.err
	}
	c.writing = false
	if derr := c.drainLocked(); err == nil {
		err = derr
	}
	return err
}

// stickyWriter remembers the first error of w and writes nothing after it.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// drainLocked writes the queue unless another caller is writing; it
// unlocks wmu.
func (c *StreamConn) drainLocked() error {
	if c.writing {
		c.wmu.Unlock()
		return nil
	}
	c.writing = true
	for len(c.pending) > 0 && c.werr == nil {
		buf := c.pending
		c.pending = c.spare[:0]
		c.wmu.Unlock()
		_, err := c.w.Write(buf)
		c.wmu.Lock()
		if cap(buf) <= 1<<20 {
			c.spare = buf[:0]
		} else {
			c.spare = nil // do not keep a huge buffer alive
		}
		if err != nil {
			c.werr = err
		}
	}
	c.writing = false
	c.idle.Broadcast()
	err := c.werr
	c.wmu.Unlock()
	return err
}

// Close writes every queued message, waits until they are written, and
// calls the closer.
func (c *StreamConn) Close() error {
	c.wmu.Lock()
	c.drainLocked()
	c.wmu.Lock()
	for c.writing {
		c.idle.Wait()
	}
	c.wmu.Unlock()
	if c.close == nil {
		return nil
	}
	return c.close()
}

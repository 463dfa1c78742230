package elicit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// Conn is one side of the proxy: a stream of raw JSON-RPC messages.
type Conn interface {
	// ReadMessage returns the next message. It returns io.EOF when the
	// peer has gone, and a *TooLargeError for a message too large to
	// return whole (which is skipped; reading can go on). A Conn that is
	// also a FrameReader hands such messages over as streams instead.
	ReadMessage() ([]byte, error)
	// WriteMessage writes one message. It is safe for concurrent use.
	WriteMessage(msg []byte) error
	// Close closes the stream.
	Close() error
}

// FrameReader is a Conn that hands over a message too large to read whole
// as a stream, so the proxy relays it in bounded memory.
type FrameReader interface {
	// ReadFrame returns the next message: whole in Head, or its first
	// bytes in Head and the rest in Rest, which must be read to its end
	// before the next ReadFrame (ReadFrame discards what is left).
	ReadFrame() (jsonrpc.Frame, error)
}

// StreamWriter is a Conn that writes a message as a stream.
type StreamWriter interface {
	// WriteStream writes one message: write is called with the stream to
	// write the message's bytes to, and other writes wait until it
	// returns. An error of write that is not the stream's own (the source
	// of the message broke) still ends the message, so the next one is
	// framed apart; it is returned.
	WriteStream(write func(w io.Writer) error) error
}

// DefaultMaxMessage is the size up to which a stdio stream reads a
// message whole; a larger one is read as a stream (ReadFrame).
const DefaultMaxMessage = 4 << 20

// TooLargeError reports a message over the size ReadMessage returns whole.
type TooLargeError struct{ Limit int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("message larger than %d bytes skipped", e.Limit)
}

// StreamConn frames JSON-RPC messages as newline-delimited JSON, the MCP
// stdio transport.
type StreamConn struct {
	r     *bufio.Reader
	max   int
	close func() error
	// rest is the unread remainder of the last message ReadFrame handed
	// over as a stream; only the reading goroutine uses it.
	rest *lineRest

	w io.Writer

	// wmu guards the write state: messages queue in pending while one
	// caller writes, and that caller writes them all in one system call
	// (combining), so a burst costs one write instead of one per message.
	// A stream being written (WriteStream) counts as writing.
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

// WholeLimit returns the size up to which a message is read whole.
func (c *StreamConn) WholeLimit() int { return c.max }

// ReadMessage returns the next non-empty line, or a *TooLargeError for
// one over the limit, which is skipped.
func (c *StreamConn) ReadMessage() ([]byte, error) {
	f, err := c.ReadFrame()
	if err != nil {
		return nil, err
	}
	if f.Rest != nil {
		if _, err := io.Copy(io.Discard, f.Rest); err != nil {
			return nil, err
		}
		return nil, &TooLargeError{Limit: c.max}
	}
	return f.Head, nil
}

// ReadFrame returns the next non-empty line: whole when it is at most the
// limit, otherwise its first bytes and a stream of the rest (to the end of
// the line, without the newline).
func (c *StreamConn) ReadFrame() (jsonrpc.Frame, error) {
	if c.rest != nil {
		_, err := io.Copy(io.Discard, c.rest)
		c.rest = nil
		if err != nil {
			return jsonrpc.Frame{}, err
		}
	}
	for {
		var line []byte
		for {
			frag, err := c.r.ReadSlice('\n')
			line = append(line, frag...)
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				if len(line) > c.max {
					c.rest = &lineRest{r: c.r}
					return jsonrpc.Frame{Head: line, Rest: c.rest}, nil
				}
				continue
			}
			if err == io.EOF && len(bytes.TrimSpace(line)) > 0 {
				return jsonrpc.Frame{Head: bytes.TrimSpace(line)}, nil
			}
			return jsonrpc.Frame{}, err
		}
		line = bytes.TrimSpace(line)
		if len(line) > c.max {
			// Read already, but over the limit all the same: a stream
			// whose head is all of it.
			return jsonrpc.Frame{Head: line, Rest: bytes.NewReader(nil)}, nil
		}
		if len(line) > 0 {
			return jsonrpc.Frame{Head: line}, nil
		}
	}
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

// WriteMessage writes msg and a newline, after any deferred messages.
// Messages stay whole and in call order; when another caller is writing,
// msg joins its next system call and WriteMessage returns at once. A write
// error is sticky and returned to every later caller.
func (c *StreamConn) WriteMessage(msg []byte) error {
	c.wmu.Lock()
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	c.pending = append(append(c.pending, msg...), '\n')
	return c.drainLocked()
}

// WriteDeferred queues msg without writing it; the next WriteMessage or
// Flush writes it. The relay loop uses it while more input is already
// buffered, so a burst of messages leaves in one system call.
func (c *StreamConn) WriteDeferred(msg []byte) {
	c.wmu.Lock()
	c.pending = append(append(c.pending, msg...), '\n')
	c.wmu.Unlock()
}

// Buffered reports whether a whole message is already buffered, so the
// next ReadMessage returns without a system call. A partial line does not
// count: the reader would block on it.
func (c *StreamConn) Buffered() bool {
	n := c.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// WriteStream writes one message as a stream (see StreamWriter): the
// messages queued before it first, then what write writes, then the
// newline, while every other writer queues behind it.
func (c *StreamConn) WriteStream(write func(w io.Writer) error) error {
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
	err := write(sw)
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

// Flush writes every queued message and waits until they are written.
func (c *StreamConn) Flush() error {
	c.wmu.Lock()
	if err := c.drainLocked(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for c.writing {
		c.idle.Wait()
	}
	return c.werr
}

// Close flushes queued messages and calls the closer.
func (c *StreamConn) Close() error {
	c.Flush()
	if c.close == nil {
		return nil
	}
	return c.close()
}

package elicit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Conn is one side of the proxy: a stream of raw JSON-RPC messages.
type Conn interface {
	// ReadMessage returns the next message. It returns io.EOF when the
	// peer has gone, and a *TooLargeError for a message over the limit
	// (which is skipped; reading can go on).
	ReadMessage() ([]byte, error)
	// WriteMessage writes one message. It is safe for concurrent use.
	WriteMessage(msg []byte) error
	// Close closes the stream.
	Close() error
}

// DefaultMaxMessage bounds one message on a stdio stream.
const DefaultMaxMessage = 16 << 20

// TooLargeError reports a message over the size limit.
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

	w io.Writer

	// wmu guards the write state: messages queue in pending while one
	// caller writes, and that caller writes them all in one system call
	// (combining), so a burst costs one write instead of one per message.
	wmu     sync.Mutex
	idle    *sync.Cond
	pending []byte
	spare   []byte
	writing bool
	werr    error
}

// NewStreamConn frames r and w. closer, if not nil, is called by Close.
// max bounds one message (0 means DefaultMaxMessage).
func NewStreamConn(r io.Reader, w io.Writer, closer func() error, max int) *StreamConn {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	c := &StreamConn{r: bufio.NewReaderSize(r, 64<<10), w: w, close: closer, max: max}
	c.idle = sync.NewCond(&c.wmu)
	return c
}

// ReadMessage returns the next non-empty line.
func (c *StreamConn) ReadMessage() ([]byte, error) {
	for {
		var line []byte
		tooLarge := false
		for {
			frag, err := c.r.ReadSlice('\n')
			if len(line)+len(frag) > c.max {
				tooLarge = true
				line = line[:0]
			} else if !tooLarge {
				line = append(line, frag...)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err == io.EOF && len(line) > 0 && !tooLarge {
				return bytes.TrimSpace(line), nil
			}
			return nil, err
		}
		if tooLarge {
			return nil, &TooLargeError{Limit: c.max}
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			return line, nil
		}
	}
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

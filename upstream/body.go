package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// Messages of any size. A client message the proxy relays as a stream is
// POSTed with the stream as its body (WriteStream); a JSON response over
// DefaultMaxMessage is handed to the proxy as its head and a stream of the
// rest of the body (ReadFrame), the POST holding its connection until the
// proxy has read it. Neither is ever held whole.

// DefaultMaxMessage is the size up to which a JSON response is read whole;
// a larger one is handed over as a stream. It matches the stdio framing's.
const DefaultMaxMessage = 4 << 20

// ReadFrame returns the next message from the server: whole, or a large
// JSON response as its head and a stream of the rest, which must be read
// before the next call (elicit.FrameReader). io.EOF after Close.
func (c *Conn) ReadFrame() (jsonrpc.Frame, error) {
	f, _, err := c.ReadRelatedFrame()
	return f, err
}

// deliverStream hands a large response to the reader as head and the
// rest of body, and returns once the reader is through it (or Close).
func (c *Conn) deliverStream(head []byte, body io.Reader) {
	done := make(chan struct{})
	select {
	case c.in <- inbound{msg: head, rest: &doneReader{r: body, done: done}}:
	case <-c.ctx.Done():
		return
	}
	select {
	case <-done:
	case <-c.ctx.Done():
	}
}

// doneReader closes done when its reader ends or fails.
type doneReader struct {
	r    io.Reader
	done chan struct{}
	once sync.Once
}

func (d *doneReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil {
		d.once.Do(func() { close(d.done) })
	}
	return n, err
}

// readJSONBody delivers an application/json response body: whole when it
// is at most DefaultMaxMessage, otherwise as a stream. It reports false,
// delivering nothing, for a small body that is not JSON.
func (c *Conn) readJSONBody(body io.Reader, isInit bool) (bool, error) {
	head, err := io.ReadAll(io.LimitReader(body, DefaultMaxMessage+1))
	if err != nil {
		return true, err
	}
	if len(head) > DefaultMaxMessage {
		c.deliverStream(head, body)
		return true, nil
	}
	if !json.Valid(head) {
		return false, nil
	}
	if isInit {
		c.learnVersion(head)
	}
	c.deliver(bytes.TrimSpace(head))
	return true, nil
}

// WriteStream POSTs one client message whose bytes write writes, as the
// request body, in the order WriteMessage keeps (elicit.StreamWriter).
// What the transport needs of the message (its id, to fail it; its
// method) is read from the bytes as they pass. In a session that may be
// of the 2026-07-28 era (no 2025 revision was negotiated with initialize),
// a request's headers mirror its params (Mcp-Method, Mcp-Name,
// Mcp-Param-*), and headers go before the body: there the message is
// read whole first, and posted as WriteMessage posts it.
func (c *Conn) WriteStream(write func(w io.Writer) error) error {
	c.mu.Lock()
	lg, closed, version := c.legacy, c.closed, c.version
	streamed := !closed && (lg != nil || (version != "" && !isModern(version)))
	if streamed {
		// Counted under mu with the closed check, so Close's Wait never
		// races an Add (sendStream calls Done).
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if closed {
		return io.ErrClosedPipe
	}
	if !streamed {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return err
		}
		return c.WriteMessage(b.Bytes())
	}
	pr, pw := io.Pipe()
	tee := &envTee{w: pw, sc: jsonrpc.NewScanner(jsonrpc.ScanOptions{})}
	c.order.Lock()
	defer c.order.Unlock()
	acked := make(chan struct{})
	go c.sendStream(lg, pr, tee, acked)
	err := write(tee)
	pw.CloseWithError(err)
	select {
	case <-acked:
	case <-c.ctx.Done():
	}
	if errors.Is(err, io.ErrClosedPipe) {
		return nil // the POST failed and the client was told; nothing to stop
	}
	return err
}

// sendStream is the goroutine of one streamed POST, over the HTTP+SSE
// transport when lg is set; WriteStream counted it.
func (c *Conn) sendStream(lg *legacy, body *io.PipeReader, tee *envTee, acked chan struct{}) {
	defer c.wg.Done()
	if lg != nil {
		lg.send(body, func() envelope { return tee.outbound().envelope }, acked)
		return
	}
	c.send(body, tee.outbound, nil, acked)
}

// envTee passes a message's bytes on to w and reads its envelope on the
// way; envelope may be called from another goroutine.
type envTee struct {
	w io.Writer
	// mu guards sc.
	mu sync.Mutex
	sc *jsonrpc.Scanner
}

func (t *envTee) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.sc.Write(p)
	t.mu.Unlock()
	return t.w.Write(p)
}

// outbound returns what was read of the message so far.
func (t *envTee) outbound() outbound {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sc.Envelope()
	return outbound{envelope: envelope{ID: append([]byte(nil), e.ID...), Method: e.Method}}
}

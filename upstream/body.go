package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// Messages of any size. A client message the proxy relays as a stream is
// POSTed with the stream as its body (writeStream); a JSON response over
// DefaultMaxMessage, or an event of a server's stream whose data is, is
// handed to the proxy as its head and a stream of the rest (Frame.Rest),
// the body's or the event stream's connection held until the proxy has
// read it. Neither is held whole, with one exception the protocol makes:
// a request of the 2026-07-28 era carries headers that mirror values from
// anywhere in its body, and headers go first, so such a message is read
// whole, up to Options.MaxWholeMessage (16 MiB by default); likewise the
// result of a modern tools/list, whose tools the transport checks.
//
// Every message reaches the proxy as one line: the CRs and LFs in it
// (in a JSON text they can only be white space between tokens, and an
// event's data lines are joined with LF) become spaces, so a message
// keeps its meaning and its length, and a stdio client's framing (MCP
// stdio: messages MUST NOT contain embedded newlines) holds even for
// bytes that are not JSON after all.

// DefaultMaxMessage is the size up to which a JSON response is read whole;
// a larger one is handed over as a stream. It matches the stdio framing's.
const DefaultMaxMessage = 4 << 20

// deliverStream hands a large message to the reader as head and the
// rest of body, with the id of the request whose response stream carried
// it (related; nil for none), and returns once the reader is through it,
// reporting true, or at Close, reporting false: the reader may then still
// be reading body.
func (c *Conn) deliverStream(head []byte, body io.Reader, related json.RawMessage) bool {
	done := make(chan struct{})
	select {
	case c.in <- inbound{msg: head, rest: &doneReader{r: body, done: done}, related: related}:
	case <-c.ctx.Done():
		return false
	}
	select {
	case <-done:
		return true
	case <-c.ctx.Done():
		return false
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
// delivering nothing, for a small body that is not JSON. The result of a
// modern tools/list is the exception: the transport must drop the tools
// whose x-mcp-header annotations break the rules before the client sees
// any, so it is read whole up to Options.MaxWholeMessage, and a larger one
// fails its request with an error naming the limit.
func (c *Conn) readJSONBody(body io.Reader, size int64, env envelope, isInit bool) (bool, error) {
	limit, list := DefaultMaxMessage, c.modern.awaitsList(env.ID)
	if list {
		limit = max(limit, c.opts.MaxWholeMessage)
	}
	head, err := readUpTo(body, size, limit)
	if err != nil {
		return true, err
	}
	if len(head) > limit {
		if list {
			c.modern.forgetList(env.ID)
			c.fail(env.ID, listTooLarge(limit))
			return true, nil
		}
		c.deliverStream(oneLine(head), oneLineReader{body}, nil)
		return true, nil
	}
	if !jsonrpc.Valid(head) {
		return false, nil
	}
	if isInit {
		c.learnVersion(head)
	}
	c.deliver(oneLine(bytes.TrimSpace(head)))
	return true, nil
}

// readUpTo reads r to its end, or to limit+1 bytes: in one allocation
// when size, the body's Content-Length (-1 when unknown), is within limit.
func readUpTo(r io.Reader, size int64, limit int) ([]byte, error) {
	if size < 0 || size > int64(limit) {
		return io.ReadAll(io.LimitReader(r, int64(limit)+1))
	}
	b := make([]byte, 0, size+1) // room to read the end without growing
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b):
			// More than the Content-Length said: read on as if it were
			// unknown.
			rest, err := io.ReadAll(io.LimitReader(r, int64(limit)+1-int64(len(b))))
			return append(b, rest...), err
		}
	}
}

// listTooLarge is the error a modern tools/list gets when its result is
// over the limit of what the transport reads whole.
func listTooLarge(limit int) string {
	return fmt.Sprintf("the server's tools/list result is over %d bytes, the limit of a result the bridge reads whole to check its tools' x-mcp-header annotations (MCP 2026-07-28)", limit)
}

// oneLine turns the CRs and LFs of b into spaces, in place, and returns b.
func oneLine(b []byte) []byte {
	for i := bytes.IndexAny(b, "\r\n"); i >= 0; {
		b[i] = ' '
		j := bytes.IndexAny(b[i+1:], "\r\n")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return b
}

// oneLineReader reads r with its CRs and LFs turned into spaces.
type oneLineReader struct{ r io.Reader }

func (o oneLineReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	oneLine(p[:n])
	return n, err
}

// writeStream POSTs one client message whose bytes write writes, as the
// request body, in the order writeMessage keeps.
// What the transport needs of the message (its id, to fail it; its
// method) is read from the bytes as they pass. In a session that may be
// of the 2026-07-28 era (no 2025 revision was negotiated with initialize),
// a request's headers mirror its params (Mcp-Method, Mcp-Name,
// Mcp-Param-*), and headers go before the body: there the message is
// read whole first, up to Options.MaxWholeMessage, and posted as
// writeMessage posts it; a larger one is not posted, and its request is
// answered with an error that names the limit.
func (c *Conn) writeStream(write func(w io.Writer) error) error {
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
		b := &wholeBuffer{max: c.opts.MaxWholeMessage}
		if err := write(b); err != nil {
			return err
		}
		if b.sc != nil {
			return c.refuseWhole(b.sc.Envelope(), b.n, b.max)
		}
		return c.writeMessage(b.buf.Bytes())
	}
	pr, pw := io.Pipe()
	tee := &envTee{w: pw, sc: jsonrpc.NewScanner(jsonrpc.ScanOptions{})}
	c.order.Lock()
	defer c.order.Unlock()
	c.awaitPrev()
	a := newAck()
	if lg == nil {
		c.prevAck = a
		c.lastAck.Store(a)
	}
	go c.sendStream(lg, pr, tee, a)
	err := write(tee)
	pw.CloseWithError(err)
	if lg != nil {
		// HTTP+SSE posts one message at a time, each to its end.
		select {
		case <-a.done:
		case <-c.ctx.Done():
		}
	}
	if errors.Is(err, io.ErrClosedPipe) {
		return nil // the POST failed and the client was told; nothing to stop
	}
	return err
}

// sendStream is the goroutine of one streamed POST, over the HTTP+SSE
// transport when lg is set; writeStream counted it.
func (c *Conn) sendStream(lg *legacy, body *io.PipeReader, tee *envTee, a *ack) {
	defer c.wg.Done()
	if lg != nil {
		lg.send(body, func() envelope { return tee.outbound().envelope }, a.done)
		return
	}
	c.send(c.ctx, body, tee.outbound, nil, a, nil)
}

// refuseWhole answers a client message over the limit of what writeStream
// reads whole, which is not posted. A request gets an error naming the
// limit; a response to one of the server's requests is replaced, for the
// server, by an error response with its id, so the server does not wait
// for it forever (and the client never gets an answer from the server's id
// space); a notification is dropped with a warning. Only sizes are logged.
func (c *Conn) refuseWhole(env *jsonrpc.Envelope, n, limit int) error {
	msg := fmt.Sprintf("the message is %d bytes, over the %d-byte limit of a message the bridge reads whole to post to an MCP 2026-07-28 server (its request headers mirror the body); send a smaller one", n, limit)
	switch {
	case env.Method != "":
		c.fail(env.ID, msg)
		return nil
	case jsonrpc.HasID(env.ID):
		c.log.Warn("the client's response to a server request is over the limit of a message read whole; the server gets an error in its place", "bytes", n, "limit", limit)
		return c.writeMessage(jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeInternal, "the client's response "+msg[len("the message "):]))
	default:
		c.log.Warn("dropped a client message over the limit of a message read whole: it is neither a request nor a response", "bytes", n, "limit", limit)
		return nil
	}
}

// wholeBuffer holds a message up to max bytes. Past max it drops what it
// holds and reads on only the envelope, so its request can be answered.
type wholeBuffer struct {
	max int
	n   int
	buf bytes.Buffer
	sc  *jsonrpc.Scanner // set once the message is over max
}

func (b *wholeBuffer) Write(p []byte) (int, error) {
	b.n += len(p)
	switch {
	case b.sc != nil:
		b.sc.Write(p)
	case b.n > b.max:
		b.sc = jsonrpc.NewScanner(jsonrpc.ScanOptions{})
		b.sc.Write(b.buf.Bytes())
		b.sc.Write(p)
		b.buf = bytes.Buffer{}
	default:
		b.buf.Write(p)
	}
	return len(p), nil
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

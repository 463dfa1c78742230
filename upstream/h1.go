package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The POST of a whole message to a plain http:// server reached without
// a proxy is the transport's own HTTP/1.1 exchange, on the goroutine that
// posts it: the request is written and the response read on that one
// goroutine, from a pool of kept-alive connections. net/http's Transport
// gives each connection a reading and a writing goroutine, so each of its
// requests passes between three goroutines five times (the request to
// the writer, its written signal back, the response from the reader, and
// the body's end there and back so the connection is pooled before the
// caller goes on); over loopback each pass can wake a thread, and they
// were most of what a --url round trip cost the bridge above the pumps.
//
// The bytes on the wire are the Transport's, written by the same
// http.Request.Write and read by the same http.ReadResponse, except that
// no Accept-Encoding: gzip is added (the Transport adds it and undoes
// the compression it asked for, so the server's answer is the same).
// Everything else, the GET stream and DELETE among it, HTTPS (HTTP/2),
// a proxy, a URL with userinfo, a streamed body, a body over
// maxDirectBody, a header the Transport would refuse, and a caller's own
// Options.Client, goes through net/http as before.
//
// What the Transport's reader goroutine did for a connection at rest,
// notice that the server closed it, is done when the connection is taken
// from the pool (idleConnUsable): a connection the server closed, or on
// which it sent bytes nobody asked for, is closed and another taken. A
// write that fails on a reused connection is tried once more on a new
// one, as the Transport does for a request it could not write; a request
// whose write went out is never sent twice.
//
// A server may close a connection at rest when its own keep-alive timer
// fires, at the very moment a request goes out on it: the request is
// then lost to a reset, and cannot be sent again. A server that says
// how long it keeps a connection (Keep-Alive: timeout=N, as Node's
// http server does, 5 s) has its connection retired keepAliveMargin
// before that, as undici does (keepAliveTimeoutThreshold), so a request
// never races its timer.

// maxDirectBody is the largest message posted on the transport's own
// exchange; a larger one goes through net/http, whose writing goroutine
// keeps reading while a server answers before it has read the body.
const maxDirectBody = 64 << 10

// maxEarlyBody is the largest message whose request is written on the
// goroutine of the message's Write (writeEarly): one that fits a
// connection at rest's socket buffer, so the write does not wait.
const maxEarlyBody = 16 << 10

// direct is the transport's own HTTP/1.1 client for one server: its
// address and a pool of idle connections. It is safe for concurrent use.
type direct struct {
	addr    string
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle int

	// mu guards the fields below.
	mu     sync.Mutex
	idle   []*h1Conn
	closed bool
}

// h1Conn is one connection and its buffers.
type h1Conn struct {
	nc net.Conn
	lr *limitedConn // br's source: bounds a response's head
	br *bufio.Reader
	bw *bufio.Writer
	// reuseBy is when the connection, once at rest, is no longer taken
	// from the pool: the server's keep-alive timeout (Keep-Alive:
	// timeout=N of its last response) less keepAliveMargin. Zero when
	// the server named none.
	reuseBy time.Time
}

// keepAliveMargin is how long before the keep-alive timeout a server
// names a connection at rest is retired: the time its last response
// may have taken to be read.
const keepAliveMargin = 2 * time.Second

// keepAliveUntil is the reuseBy of a connection whose last response,
// read at now, had header h.
func keepAliveUntil(h http.Header, now time.Time) time.Time {
	for _, v := range h.Values("Keep-Alive") {
		for _, param := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(param), "=")
			if !strings.EqualFold(name, "timeout") {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n < 0 {
				continue
			}
			return now.Add(time.Duration(min(n, 1<<20))*time.Second - keepAliveMargin)
		}
	}
	return time.Time{}
}

// maxResponseHead bounds the bytes of a response's head, its 1xx
// interim responses included: the Transport's default
// MaxResponseHeaderBytes, which net/http applies the same way.
const maxResponseHead = 10 << 20

// limitedConn reads from nc at most n bytes, then fails: a server that
// sends a head without end fills no memory and holds no POST forever.
type limitedConn struct {
	nc net.Conn
	n  int64
}

// errHeadTooLarge fails a response whose head exceeds maxResponseHead.
var errHeadTooLarge = fmt.Errorf("the server's response headers exceeded %d bytes; the exchange was aborted", maxResponseHead)

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.nc.Read(p)
	l.n -= int64(n)
	return n, err
}

// newDirect returns the transport's own client for u when u is a plain
// http:// URL without userinfo that proxyFor does not send through a
// proxy, and nil otherwise (net/http then does every POST).
func newDirect(u *url.URL, proxyFor func(*http.Request) (*url.URL, error), dial func(ctx context.Context, network, addr string) (net.Conn, error), maxIdle int) *direct {
	if u == nil || u.Scheme != "http" || u.User != nil || u.Host == "" || !canCheckIdle {
		return nil
	}
	if proxyFor != nil {
		p, err := proxyFor(&http.Request{Method: "POST", URL: u, Header: http.Header{}})
		if err != nil || p != nil {
			return nil
		}
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return &direct{addr: net.JoinHostPort(u.Hostname(), port), dial: dial, maxIdle: maxIdle}
}

// takes reports whether the exchange takes req, whose body is a whole
// message of n bytes: not too large, and headers the Transport would
// send (it refuses invalid ones, with an error the caller then gets
// from it).
func (d *direct) takes(req *http.Request, n int) bool {
	return d != nil && n <= maxDirectBody && validHeader(req.Header)
}

// roundTrip writes req, whose body is a whole message, and reads the
// response's head; sent is called once the request is written. The
// response's body reads from the connection, which returns to the pool
// once the body is read to its end (or is closed at its end), and is
// closed when the body is closed before it. The request's context ends
// the exchange, as it ends net/http's. Errors are *url.Error, as
// net/http's.
func (d *direct) roundTrip(req *http.Request, sent func()) (*http.Response, error) {
	resp, err := d.exchange(req, sent)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: err}
	}
	return resp, nil
}

func (d *direct) exchange(req *http.Request, sent func()) (*http.Response, error) {
	ctx := req.Context()
	for tries := 0; ; tries++ {
		pc, reused, err := d.get(ctx)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { pc.nc.SetDeadline(time.Unix(1, 0)) })
		if err := d.write(pc, req); err != nil {
			stop()
			pc.nc.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if reused && tries == 0 && req.GetBody != nil {
				// The server closed the connection before it took the
				// request: it saw none of it. Once more, on a new one.
				if body, gerr := req.GetBody(); gerr == nil {
					req.Body = body
					continue
				}
			}
			return nil, err
		}
		sent()
		return d.read(&written{req: req, pc: pc, stop: stop})
	}
}

// written is a request written on a connection, whose response is still
// to be read (read).
type written struct {
	req  *http.Request
	pc   *h1Conn
	stop func() bool // ends the request context's hold on pc
}

// abandon closes the connection of a request whose response will not be
// read.
func (w *written) abandon() {
	w.stop()
	w.pc.nc.Close()
}

// writeIdle writes req on a connection at rest, if the pool has one, and
// returns it for read; nil, having written nothing, when the pool is
// empty or the write failed (the connection is then closed). It never
// dials, so a caller that must not wait long may use it.
func (d *direct) writeIdle(req *http.Request) *written {
	pc := d.idleConn()
	if pc == nil {
		return nil
	}
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { pc.nc.SetDeadline(time.Unix(1, 0)) })
	if err := d.write(pc, req); err != nil {
		stop()
		pc.nc.Close()
		return nil
	}
	return &written{req: req, pc: pc, stop: stop}
}

// readWritten is roundTrip for a request writeIdle wrote.
func (d *direct) readWritten(w *written) (*http.Response, error) {
	resp, err := d.read(w)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: w.req.URL.String(), Err: err}
	}
	return resp, nil
}

// read reads the response to a written request.
func (d *direct) read(w *written) (*http.Response, error) {
	ctx := w.req.Context()
	w.pc.lr.n = maxResponseHead
	resp, err := readResponse(w.pc.br, w.req)
	if err != nil && w.pc.lr.n <= 0 {
		err = errHeadTooLarge // whatever the cut head looked like
	}
	w.pc.lr.n = math.MaxInt64 // a body is bounded by its reader
	if err != nil {
		w.abandon()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	w.pc.reuseBy = keepAliveUntil(resp.Header, time.Now())
	resp.Body = &h1Body{d: d, pc: w.pc, body: resp.Body, ctx: ctx, stop: w.stop, reuse: !resp.Close && resp.ProtoAtLeast(1, 1)}
	return resp, nil
}

// write writes req to the connection.
func (d *direct) write(pc *h1Conn, req *http.Request) error {
	if err := req.Write(pc.bw); err != nil {
		return err
	}
	return pc.bw.Flush()
}

// readResponse reads the response to req, past any 1xx interim response
// (the Transport passes none on but 101, which a POST does not get).
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// get returns an idle connection that is still usable, or a new one, and
// whether it was idle.
func (d *direct) get(ctx context.Context) (*h1Conn, bool, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, false, net.ErrClosed
	}
	if pc := d.idleConn(); pc != nil {
		return pc, true, nil
	}
	nc, err := d.dial(ctx, "tcp", d.addr)
	if err != nil {
		return nil, false, err
	}
	lr := &limitedConn{nc: nc, n: math.MaxInt64}
	return &h1Conn{nc: nc, lr: lr, br: bufio.NewReaderSize(lr, 4<<10), bw: bufio.NewWriterSize(nc, 4<<10)}, false, nil
}

// hasIdle reports whether the pool holds a connection at rest (which
// idleConn may still find closed).
func (d *direct) hasIdle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.idle) > 0
}

// idleConn takes a connection at rest that is still usable from the
// pool, closing those that are not; nil when none is left.
func (d *direct) idleConn() *h1Conn {
	for {
		d.mu.Lock()
		n := len(d.idle)
		if n == 0 {
			d.mu.Unlock()
			return nil
		}
		pc := d.idle[n-1]
		d.idle[n-1] = nil
		d.idle = d.idle[:n-1]
		d.mu.Unlock()
		if pc.br.Buffered() == 0 && (pc.reuseBy.IsZero() || time.Now().Before(pc.reuseBy)) && idleConnUsable(pc.nc) {
			return pc
		}
		pc.nc.Close()
	}
}

// put returns a connection whose response was read to its end to the
// pool, or closes it when the pool is full or closed.
func (d *direct) put(pc *h1Conn) {
	pc.nc.SetDeadline(time.Time{})
	d.mu.Lock()
	if !d.closed && len(d.idle) < d.maxIdle {
		d.idle = append(d.idle, pc)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	pc.nc.Close()
}

// close closes the idle connections, and every connection given back
// after it.
func (d *direct) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	idle := d.idle
	d.idle, d.closed = nil, true
	d.mu.Unlock()
	for _, pc := range idle {
		pc.nc.Close()
	}
}

// h1Body is a response's body on the transport's own exchange: its
// connection goes back to the pool when the body has been read to its
// end, before the reader sees the end, so the next POST finds it; a body
// closed before its end closes its connection. Close may be called while
// Read waits (drainStream's bound): it closes the connection under it.
type h1Body struct {
	d     *direct
	pc    *h1Conn
	body  io.ReadCloser
	ctx   context.Context
	stop  func() bool
	reuse bool

	// mu guards done: set once the connection was pooled or closed, after
	// which the body no longer touches it.
	mu   sync.Mutex
	done bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.finish(true)
	case err != nil:
		b.finish(false)
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
	}
	return n, err
}

// Close pools the connection when the body was all read (or had no
// bytes), and closes it otherwise.
func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}

// finish ends the body once: the connection goes back to the pool when
// the body ended (atEOF, or a body known to be empty), the response may
// be followed by another and the server sent nothing after it; otherwise
// it is closed.
func (b *h1Body) finish(atEOF bool) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	b.mu.Unlock()
	ended := atEOF || b.body == http.NoBody
	// The context's hold on the connection ends first: a cancellation
	// after this must not touch a connection another POST may hold.
	stopped := b.stop()
	if ended && b.reuse && stopped && b.pc.br.Buffered() == 0 {
		b.d.put(b.pc)
		return
	}
	b.pc.nc.Close()
}

// validHeader reports whether every field of h is one the Transport
// sends: a token for a name, and a value without control characters
// other than tab.
func validHeader(h http.Header) bool {
	for k, vs := range h {
		if k == "" {
			return false
		}
		for i := 0; i < len(k); i++ {
			if !isTokenByte(k[i]) {
				return false
			}
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
					return false
				}
			}
		}
	}
	return true
}

// isTokenByte reports whether c may be in an HTTP token (RFC 9110 tchar).
func isTokenByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

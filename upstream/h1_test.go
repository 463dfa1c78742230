package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// connCounter counts the connections a test server accepted.
type connCounter struct {
	mu sync.Mutex
	n  int
}

func (cc *connCounter) state(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		cc.mu.Lock()
		cc.n++
		cc.mu.Unlock()
	}
}

func (cc *connCounter) count() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.n
}

// jsonEcho answers every POST with a JSON result carrying its id;
// before, when not nil, runs first and may set headers or send an
// interim response.
func jsonEcho(t *testing.T, before func(w http.ResponseWriter)) (*httptest.Server, *connCounter) {
	cc := &connCounter{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		m := decodeRequest(t, r)
		if before != nil {
			before(w)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
	}))
	srv.Config.ConnState = cc.state
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cc
}

// call posts a tools/call with id and fails the test unless its result
// comes back.
func call(t *testing.T, c *Conn, id int) {
	t.Helper()
	if err := c.Write(t.Context(), frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id))); err != nil {
		t.Fatal(err)
	}
	if got, want := next(t, c), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id); got != want {
		t.Fatalf("call %d: got %s; want %s", id, got, want)
	}
}

// TestPostsReuseOneConnection: the POSTs of a session, one after the
// other, all travel on one kept-alive connection, as a direct client's.
func TestPostsReuseOneConnection(t *testing.T) {
	srv, cc := jsonEcho(t, nil)
	c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable"})
	for i := range 20 {
		call(t, c, i+1)
	}
	if n := cc.count(); n != 1 {
		t.Errorf("20 POSTs came on %d connections; want 1", n)
	}
}

// TestPostAfterTheServerClosedTheIdleConnection: a connection the server
// closed while it was at rest is not used again; the next POST goes on a
// new one and gets its answer.
func TestPostAfterTheServerClosedTheIdleConnection(t *testing.T) {
	srv, cc := jsonEcho(t, nil)
	c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable"})
	for i := range 3 {
		call(t, c, i+1)
		srv.CloseClientConnections()
	}
	if n := cc.count(); n != 3 {
		t.Errorf("3 POSTs, each after the server closed the connections, came on %d connections; want 3", n)
	}
}

// TestConnectionCloseIsNotReused: a response that says Connection: close
// ends its connection; the next POST dials a new one.
func TestConnectionCloseIsNotReused(t *testing.T) {
	srv, cc := jsonEcho(t, func(w http.ResponseWriter) { w.Header().Set("Connection", "close") })
	c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable"})
	for i := range 3 {
		call(t, c, i+1)
	}
	if n := cc.count(); n != 3 {
		t.Errorf("3 POSTs answered with Connection: close came on %d connections; want 3", n)
	}
}

// rawServer serves each connection it accepts with serve, on loopback,
// until the test ends; it returns its address and the count of the
// connections it accepted.
func rawServer(t *testing.T, serve func(nc net.Conn)) (string, func() int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	accepted := 0
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { ln.Close() }) // first: the accepting goroutine ends
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
			wg.Go(func() {
				defer nc.Close()
				serve(nc)
			})
		}
	})
	return ln.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return accepted
	}
}

// answerRaw reads a request from br and answers it on nc with a JSON
// result carrying its id, the header lines head beside Content-Type and
// Content-Length, and the bytes after written after the body; false when
// no request came.
func answerRaw(t *testing.T, br *bufio.Reader, nc net.Conn, head, after string) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	b, _ := io.ReadAll(req.Body)
	m := decode(t, string(b))
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
	fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s%s", head, len(body), body, after)
	return true
}

// TestKeepAliveTimeoutRetiresTheConnection: a server that says it keeps
// a connection at rest for a second (Keep-Alive: timeout=1) and resets
// it when a request comes after that, as a server does whose keep-alive
// timer fires as the request arrives, loses no POST: a connection is not
// used again within keepAliveMargin of the timeout the server named.
func TestKeepAliveTimeoutRetiresTheConnection(t *testing.T) {
	var reset atomic.Int32
	addr, accepted := rawServer(t, func(nc net.Conn) {
		br := bufio.NewReader(nc)
		if !answerRaw(t, br, nc, "Connection: keep-alive\r\nKeep-Alive: timeout=1\r\n", "") {
			return
		}
		if _, err := br.Peek(1); err != nil {
			return // the client closed it
		}
		// A request on a connection whose timeout passed: reset.
		reset.Add(1)
		nc.(*net.TCPConn).SetLinger(0)
	})
	c := dial(t, Options{URL: "http://" + addr + "/mcp", Transport: "streamable"})
	for i := range 3 {
		call(t, c, i+1)
	}
	c.Close()
	if n, r := accepted(), reset.Load(); n != 3 || r != 0 {
		t.Errorf("3 POSTs to a server that keeps a connection a second came on %d connections, %d of them reused after the timeout; want 3 and none", n, r)
	}
}

// TestLongKeepAliveTimeoutKeepsTheConnection: a Keep-Alive timeout
// longer than keepAliveMargin leaves the POSTs on one connection.
func TestLongKeepAliveTimeoutKeepsTheConnection(t *testing.T) {
	srv, cc := jsonEcho(t, func(w http.ResponseWriter) { w.Header().Set("Keep-Alive", "max=100, timeout=60") })
	c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable"})
	for i := range 5 {
		call(t, c, i+1)
	}
	if n := cc.count(); n != 1 {
		t.Errorf("5 POSTs answered with Keep-Alive: timeout=60 came on %d connections; want 1", n)
	}
}

// TestInterimResponseIsSkipped: a 103 Early Hints before the response is
// not the answer; the response after it is.
func TestInterimResponseIsSkipped(t *testing.T) {
	srv, _ := jsonEcho(t, func(w http.ResponseWriter) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
	})
	c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable"})
	call(t, c, 1)
	call(t, c, 2)
}

// TestBytesAfterAResponseRetireItsConnection: a server that sends bytes
// after a response's end (here the start of a response nobody asked for)
// has its connection retired, so those bytes are never read as the next
// POST's answer.
func TestBytesAfterAResponseRetireItsConnection(t *testing.T) {
	addr, accepted := rawServer(t, func(nc net.Conn) {
		br := bufio.NewReader(nc)
		for answerRaw(t, br, nc, "", "HTTP/1.1 200 OK\r\n") {
		}
	})
	c := dial(t, Options{URL: "http://" + addr + "/mcp", Transport: "streamable"})
	for i := range 3 {
		call(t, c, i+1)
	}
	c.Close()
	if n := accepted(); n != 3 {
		t.Errorf("3 POSTs, each answered with stray bytes after it, came on %d connections; want 3", n)
	}
}

// TestInvalidHeaderIsRefusedAsBefore: a header value net/http refuses to
// send fails the request with net/http's own error, as it did before the
// transport had an exchange of its own.
func TestInvalidHeaderIsRefusedAsBefore(t *testing.T) {
	srv, cc := jsonEcho(t, nil)
	c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable", Header: http.Header{"X-Bad": {"a\x01b"}}})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
	m := decode(t, next(t, c))
	if m.Error == nil || !strings.Contains(m.Error.Message, `invalid header field value for "X-Bad"`) {
		t.Fatalf("got %+v; want an error that names the invalid header", m)
	}
	if n := cc.count(); n != 0 {
		t.Errorf("the server saw %d connections; want none", n)
	}
}

// TestModernCancellationEndsTheExchange: a 2026-07-28 request the client
// cancels has its response stream closed, on the transport's own
// exchange too, whether its request went out on a new connection or was
// written at once on one at rest: the server sees its request's context
// end.
func TestModernCancellationEndsTheExchange(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("kept-alive=%v", warm), func(t *testing.T) {
			ended := make(chan struct{})
			started := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				m := decodeRequest(t, r)
				if string(m.ID) == `"warm"` {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":"warm","result":{}}`)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				close(started)
				<-r.Context().Done()
				close(ended)
			}))
			t.Cleanup(srv.Close)
			c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable"})
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernVersion + `"}`
			if warm {
				if err := c.Write(t.Context(), frame(`{"jsonrpc":"2.0","id":"warm","method":"tools/call","params":{"name":"x",`+meta+`}}`)); err != nil {
					t.Fatal(err)
				}
				next(t, c)
			}
			if err := c.Write(t.Context(), frame(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",`+meta+`}}`)); err != nil {
				t.Fatal(err)
			}
			<-started
			if err := c.Write(t.Context(), frame(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,`+meta+`}}`)); err != nil {
				t.Fatal(err)
			}
			<-ended
		})
	}
}

// TestDirectOnlyForPlainHTTPWithoutProxy: the transport's own exchange
// serves a plain http:// URL reached directly; HTTPS, a URL with userinfo
// and a URL the environment sends through a proxy keep net/http.
func TestDirectOnlyForPlainHTTPWithoutProxy(t *testing.T) {
	noProxy := func(*http.Request) (*url.URL, error) { return nil, nil }
	viaProxy := func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.test:3128") }
	tests := []struct {
		name  string
		url   string
		proxy func(*http.Request) (*url.URL, error)
		want  string // the address dialled; "" for none of its own
	}{
		{name: "http with a port", url: "http://127.0.0.1:8080/mcp", proxy: noProxy, want: "127.0.0.1:8080"},
		{name: "http without a port", url: "http://mcp.test/mcp", proxy: noProxy, want: "mcp.test:80"},
		{name: "IPv6 literal", url: "http://[::1]:9000/mcp", proxy: noProxy, want: "[::1]:9000"},
		{name: "https", url: "https://mcp.test/mcp", proxy: noProxy},
		{name: "userinfo", url: "http://u:p@mcp.test/mcp", proxy: noProxy},
		{name: "proxy", url: "http://mcp.test/mcp", proxy: viaProxy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			d := newDirect(u, tt.proxy, (&net.Dialer{}).DialContext, 1)
			got := ""
			if d != nil {
				got = d.addr
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("address (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidHeader: the fields net/http sends, and those it refuses.
func TestValidHeader(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want bool
	}{
		{name: "ordinary", h: http.Header{"Authorization": {"Bearer x"}, "Mcp-Param-Region": {"=?base64?ZXU=?="}}, want: true},
		{name: "tab in a value", h: http.Header{"X-A": {"a\tb"}}, want: true},
		{name: "LF in a value", h: http.Header{"X-A": {"a\nb"}}},
		{name: "DEL in a value", h: http.Header{"X-A": {"a\x7fb"}}},
		{name: "space in a name", h: http.Header{"X A": {"v"}}},
		{name: "empty name", h: http.Header{"": {"v"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := validHeader(tt.h); got != tt.want {
				t.Errorf("validHeader(%q) = %v; want %v", tt.h, got, tt.want)
			}
		})
	}
}

// TestPostOnAClosedPool: a POST the transport's own exchange gets after
// its pool closed fails with net.ErrClosed, dialling nothing.
func TestPostOnAClosedPool(t *testing.T) {
	dialled := false
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	d := newDirect(u, nil, func(context.Context, string, string) (net.Conn, error) {
		dialled = true
		return nil, net.ErrClosed
	}, 1)
	d.close()
	req, _ := http.NewRequest("POST", u.String(), strings.NewReader("{}"))
	if _, err := d.roundTrip(req, func() {}); err == nil || !strings.Contains(err.Error(), net.ErrClosed.Error()) || dialled {
		t.Errorf("got %v, dialled %v; want net.ErrClosed and no dial", err, dialled)
	}
}

// TestResponseHeadIsBounded: a server whose response head (interim 1xx
// responses included) runs past net/http's default bound of 10 MB gets
// the POST failed with an error that says so, as net/http does, rather
// than its head held in memory however long it grows.
func TestResponseHeadIsBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", maxResponseHead+1<<20)
	tests := []struct {
		name string
		head string
	}{
		{"one long header", "HTTP/1.1 200 OK\r\nX-Junk: " + big + "\r\n"},
		{"endless interim responses", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", (maxResponseHead+1<<20)/25) + "HTTP/1.1 200 OK\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			t.Cleanup(wg.Wait)
			t.Cleanup(func() { ln.Close() })
			wg.Go(func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				req, err := http.ReadRequest(bufio.NewReader(nc))
				if err != nil {
					return
				}
				b, _ := io.ReadAll(req.Body)
				m := decode(t, string(b))
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
				// The client that gives up closes the connection, which
				// ends this write.
				fmt.Fprintf(nc, "%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tt.head, len(body), body)
			})
			c := dial(t, Options{URL: "http://" + ln.Addr().String() + "/mcp", Transport: "streamable"})
			if err := c.Write(t.Context(), frame(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)); err != nil {
				t.Fatal(err)
			}
			m := decode(t, next(t, c))
			if m.Error == nil || !strings.Contains(m.Error.Message, "exceeded") {
				t.Fatalf("got %+v (%v); want an error that says the response's headers were too large", m, m.Error)
			}
			c.Close()
		})
	}
}

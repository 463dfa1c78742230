package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pipeListener is an in-memory network for a synctest bubble: each dial
// is a net.Pipe whose far end the server accepts, so every wait on it is
// one the bubble can see.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, errors.New("the test server is closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// heldServer records the messages POSTed to it in the order they arrive,
// and acknowledges each one (202 for a notification, a JSON result for a
// request) only when the test releases it.
type heldServer struct {
	mu      sync.Mutex
	arrived []string
	release []chan struct{}
}

func (h *heldServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &m)
	gate := make(chan struct{})
	h.mu.Lock()
	h.arrived = append(h.arrived, m.Method)
	h.release = append(h.release, gate)
	h.mu.Unlock()
	select {
	case <-gate:
	case <-r.Context().Done():
		return
	}
	if len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
}

func (h *heldServer) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.arrived...)
}

func (h *heldServer) ack(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.release[i])
}

// startHeld runs a heldServer on an in-memory network and returns a Conn
// to it. Everything stops when the test ends.
func startHeld(t *testing.T, ackWait time.Duration) (*heldServer, *Conn) {
	h := &heldServer{}
	ln := newPipeListener()
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	tr := &http.Transport{DialContext: ln.dial}
	c, err := Dial(Options{URL: "http://mcp.test/mcp", Transport: "streamable", Client: &http.Client{Transport: tr}, AckWait: ackWait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.mu.Lock()
		for _, g := range h.release {
			select {
			case <-g:
			default:
				close(g)
			}
		}
		h.mu.Unlock()
		c.Close()
		tr.CloseIdleConnections()
		srv.Close()
	})
	return h, c
}

// TestPostsGoOutOneAtATime is the ordering rule of the HTTP transport:
// a message is POSTed only once the server acknowledged the one before it
// (its 202, or the start of its response), so the server sees messages in
// the order the client sent them. The server holds each acknowledgement
// until the test releases it; a message that reaches it early fails the
// test.
func TestPostsGoOutOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c := startHeld(t, time.Hour)
		msgs := []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a"}}`,
			`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"b"}}`,
		}
		methods := []string{"notifications/initialized", "tools/list", "tools/call", "notifications/roots/list_changed", "tools/call"}
		go func() {
			for _, m := range msgs {
				c.writeMessage([]byte(m))
			}
		}()
		for i := range msgs {
			synctest.Wait()
			if diff := cmp.Diff(methods[:i+1], h.seen()); diff != "" {
				t.Fatalf("before the server acknowledged message %d, it had received (-want +got):\n%s", i+1, diff)
			}
			h.ack(i)
		}
		for range 3 {
			next(t, c) // the three results
		}
	})
}

// TestAckWaitBoundsTheHold: a server that acknowledges nothing until its
// work is done (a JSON response held to the end) holds the next message
// for AckWait at most.
func TestAckWaitBoundsTheHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c := startHeld(t, 2*time.Second)
		go func() {
			c.writeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`))
			c.writeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
		}()
		synctest.Wait()
		if got := h.seen(); len(got) != 1 {
			t.Fatalf("the server received %v before any wait; want the call alone", got)
		}
		time.Sleep(2*time.Second - time.Millisecond)
		synctest.Wait()
		if got := h.seen(); len(got) != 1 {
			t.Fatalf("the server received %v before AckWait passed; want the call alone", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if diff := cmp.Diff([]string{"tools/call", "notifications/cancelled"}, h.seen()); diff != "" {
			t.Fatalf("after AckWait (-want +got):\n%s", diff)
		}
	})
}

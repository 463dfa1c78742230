package bridge

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// short is every timeout of the host under test: short, so the test runs
// fast; each check waits for the server's own close, never for a sleep.
// The host's listener hands it a connection once the client has sent
// something (sentFirst), so the header timer never runs against a
// client that has not been given the CPU yet.
const short = 100 * time.Millisecond

// sentFirst is a listener that hands a connection to its server only
// once the client's first bytes are there to read (they are peeked, not
// taken). The server's header timer starts when it begins to read; on a
// loaded machine a client can be held off the CPU between its connect
// and its write for longer than a 100 ms timeout, and its request would
// time out before it was sent. A stalled request is still stalled: its
// first bytes are there, the rest never comes.
type sentFirst struct {
	net.Listener
	ready chan net.Conn
	done  chan struct{}
	wg    sync.WaitGroup
	// mu guards closed and peeking, the connections not handed over yet.
	mu      sync.Mutex
	closed  bool
	peeking map[net.Conn]struct{}
}

// gateFirstBytes wraps ln in a sentFirst, stopped when the test ends.
func gateFirstBytes(t *testing.T, ln net.Listener) net.Listener {
	g := &sentFirst{Listener: ln, ready: make(chan net.Conn), done: make(chan struct{}), peeking: map[net.Conn]struct{}{}}
	g.wg.Add(1)
	go g.acceptAll()
	t.Cleanup(func() { g.Close(); g.wg.Wait() })
	return g
}

func (g *sentFirst) acceptAll() {
	defer g.wg.Done()
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			c.Close()
			return
		}
		g.peeking[c] = struct{}{}
		g.mu.Unlock()
		g.wg.Add(1)
		go g.peek(c)
	}
}

// peek waits until c has bytes to read (or its peer closed it), and
// hands it to Accept.
func (g *sentFirst) peek(c net.Conn) {
	defer g.wg.Done()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err == nil {
		one := make([]byte, 1)
		rerr := rc.Read(func(fd uintptr) bool {
			_, _, err = syscall.Recvfrom(int(fd), one, syscall.MSG_PEEK)
			return err != syscall.EAGAIN
		})
		err = errors.Join(err, rerr)
	}
	g.mu.Lock()
	delete(g.peeking, c)
	g.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	select {
	case g.ready <- c:
	case <-g.done:
		c.Close()
	}
}

func (g *sentFirst) Accept() (net.Conn, error) {
	select {
	case c := <-g.ready:
		return c, nil
	case <-g.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the connections not handed over.
func (g *sentFirst) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	close(g.done)
	for c := range g.peeking {
		c.Close()
	}
	return g.Listener.Close()
}

// closedByServer reads conn until the server closes it; see
// testenv.ClosedByServer.
func closedByServer(t *testing.T, conn net.Conn) string {
	t.Helper()
	return testenv.ClosedByServer(t, conn, waitLimit)
}

// TestStalledAndIdleConnectionsEnd: a stalled header, a stalled body and an
// idle keep-alive connection are closed by the server, while a WebSocket
// and an SSE stream opened before all of them still deliver afterwards.
func TestStalledAndIdleConnectionsEnd(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, HostOptions{Listener: gateFirstBytes(t, loopback(t)), Token: trustToken, HeaderTimeout: short, BodyTimeout: short, IdleTimeout: short})
	addr := h.Addr()
	op := connectOperatorWith(t, addr, trustToken)
	op.until(func(m map[string]any) bool { return m["type"] == "subscribed" })
	resp, err := (&http.Client{Timeout: waitLimit}).Get("http://" + addr + "/stream?access_token=" + trustToken)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	t.Run("stalled header", func(t *testing.T) {
		c := testenv.RawDial(t, addr)
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n")
		closedByServer(t, c)
	})
	t.Run("stalled body", func(t *testing.T) {
		c := testenv.RawDial(t, addr)
		io.WriteString(c, "POST /events HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+trustToken+
			"\r\nAEP-Version: 0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		if got := closedByServer(t, c); got != "" && !strings.Contains(got, "timeout") {
			t.Errorf("the stalled body was answered %q; want a timeout or a bare close", got)
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c := testenv.RawDial(t, addr)
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		r := bufio.NewReader(c)
		first, err := http.ReadResponse(r, nil)
		if err != nil || first.StatusCode != 200 {
			t.Fatalf("first request: %v %v", first, err)
		}
		io.Copy(io.Discard, first.Body)
		c.SetReadDeadline(time.Now().Add(waitLimit))
		if rest, err := io.ReadAll(r); errors.Is(err, os.ErrDeadlineExceeded) || len(rest) > 0 {
			t.Fatalf("the idle connection: %q, %v; want a close", rest, err)
		}
	})

	// Both streams outlived every timeout above; they still deliver.
	ev := aep.Event{AEP: aep.Version, ID: "LIVE1", Type: "session.started", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/t/session/t", Agent: "t", Session: "t", Seq: aep.Int64(0)}
	raw, _ := json.Marshal(ev)
	h.Hub().Write(ev, raw)
	op.until(func(m map[string]any) bool { return m["id"] == "LIVE1" })
	op.send(`{"type":"ping","t":1}`)
	op.until(func(m map[string]any) bool { return m["type"] == "pong" })
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"id":"LIVE1"`) {
			return
		}
	}
	t.Fatalf("the SSE stream ended before the live event: %v", sc.Err())
}

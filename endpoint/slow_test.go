package endpoint

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// failAfter bounds every wait for the server to close a connection. It is
// a failure guard, not a measure: the deadlines under test are far shorter.
const failAfter = 20 * time.Second

// slowEndpoint serves an endpoint whose body and handshake deadlines are
// short, on a real loopback listener; it returns the listen address.
func slowEndpoint(t *testing.T) string {
	t.Helper()
	f := newFixture(t, bus.HubOptions{}, Options{BodyTimeout: 50 * time.Millisecond, handshakeWait: 50 * time.Millisecond})
	return f.srv.Listener.Addr().String()
}

// closedByServer reads c until the server closes it; see
// testenv.ClosedByServer.
func closedByServer(t *testing.T, c net.Conn) string {
	t.Helper()
	return testenv.ClosedByServer(t, c, failAfter)
}

// TestStalledBodiesEndOnEveryPath replays slowloris against the stream
// paths: a request that is not an authenticated WebSocket upgrade or an
// authenticated SSE stream keeps the body deadline, so a body that never
// comes ends the connection, with or without the token.
func TestStalledBodiesEndOnEveryPath(t *testing.T) {
	addr := slowEndpoint(t)
	const token = "Authorization: Bearer " + testToken + "\r\n"
	const upgrade = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, tc := range []struct{ name, path, headers string }{
		{name: "socket without token", path: "/socket"},
		{name: "stream without token", path: "/stream"},
		{name: "join without upgrade", path: proof.Path},
		{name: "socket with token, no upgrade", path: "/socket", headers: token},
		{name: "stream with token", path: "/stream", headers: token},
		{name: "socket upgrade without token", path: "/socket", headers: upgrade},
		{name: "socket upgrade with token and a body", path: "/socket", headers: token + upgrade},
		{name: "join upgrade with a body", path: proof.Path, headers: upgrade},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testenv.RawDial(t, addr)
			io.WriteString(c, "GET "+tc.path+" HTTP/1.1\r\nHost: "+addr+"\r\n"+tc.headers+"Content-Length: 100000\r\n\r\n{")
			if got := closedByServer(t, c); strings.Contains(got, "101 Switching") {
				t.Fatalf("a request with a body was upgraded: %q", got)
			}
		})
	}
}

// TestHandshakesEndAtTheirDeadline: a WebSocket upgraded at /join must
// complete the token proof, and one at /socket must say hello, within the
// handshake deadline; a peer that upgrades and goes silent is closed.
func TestHandshakesEndAtTheirDeadline(t *testing.T) {
	addr := slowEndpoint(t)
	for _, tc := range []struct {
		name, path string
		hdr        http.Header
	}{
		{name: "join", path: proof.Path},
		{name: "socket", path: "/socket", hdr: http.Header{"Authorization": {"Bearer " + testToken}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+tc.path, tc.hdr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(failAfter))
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Fatalf("the endpoint kept a silent %s handshake open for %v", tc.path, failAfter)
					}
					return
				}
			}
		})
	}
}

// TestProvingPeersAreBounded: the peers an endpoint serves before it knows
// who they are (proving the token at /join) are bounded; one more, while
// none has waited proveGrace (the clock stands still), is refused at once
// with 503, not queued.
func TestProvingPeersAreBounded(t *testing.T) {
	clock := &testClock{t: time.Unix(1e9, 0)}
	f := newFixture(t, bus.HubOptions{}, Options{now: clock.now})
	for range maxProving {
		dialJoin(t, f.srv.URL) // each holds its slot until the proof or its deadline
	}
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+proof.Path, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("peer %d at /join: %v %v; want 503", maxProving+1, resp, err)
	}
	resp.Body.Close()
}

// TestJoinedBridgesDoNotHoldProvingSlots: a bridge that proved the token
// gives its slot back, so more bridges than maxProving stay joined at once.
func TestJoinedBridgesDoNotHoldProvingSlots(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	for i := range maxProving + 2 {
		joinConn(t, f.srv, fmt.Sprintf("host-%d", i)) // fails the test if refused
	}
}

// testClock is a clock a test moves.
type testClock struct {
	// mu guards t.
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestAPeerThatDoesNotProveLosesItsSlot: while peers without the token
// hold every /join slot, a bridge still joins once they have waited
// proveGrace: it takes the slot of a silent one (no challenge sent)
// first, then of one that stalls before its finish; one that has not
// waited that long keeps its slot.
func TestAPeerThatDoesNotProveLosesItsSlot(t *testing.T) {
	clock := &testClock{t: time.Unix(1e9, 0)}
	f := newFixture(t, bus.HubOptions{}, Options{now: clock.now})
	host := strings.TrimPrefix(f.srv.URL, "http://")
	// One peer sends its challenge and stalls before its finish; the
	// others stay silent.
	staller := dialJoin(t, f.srv.URL)
	_, challenge, _ := proof.NewBridge("not-the-token", host, rand.Reader)
	staller.WriteMessage(websocket.TextMessage, challenge)
	if _, _, err := staller.ReadMessage(); err != nil {
		t.Fatalf("the hub's response: %v", err)
	}
	clock.advance(time.Millisecond) // the staller waits less than the silent ones
	silent := make([]*websocket.Conn, maxProving-1)
	for i := range silent {
		silent[i] = dialJoin(t, f.srv.URL)
	}
	refusedBusy := func(when string) {
		t.Helper()
		_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+proof.Path, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s: %v %v; want 503", when, resp, err)
		}
		resp.Body.Close()
	}
	refusedBusy("a newcomer while no peer has waited proveGrace")

	clock.advance(proveGrace)
	// Newcomers that stay silent too take the silent peers' slots, the
	// longest waiting first, though the staller waited longer still; a
	// newcomer's own wait has just begun, so it keeps its slot.
	for range silent {
		dialJoin(t, f.srv.URL)
	}
	for i, c := range silent {
		if _, _, err := c.ReadMessage(); err == nil {
			t.Fatalf("silent peer %d got a frame; want its connection closed", i)
		}
	}
	// (Read the TCP connection: a timed-out WebSocket read is final.)
	raw := staller.UnderlyingConn()
	raw.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := raw.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("the staller while silent peers held slots: %v; want it still waiting", err)
	}
	// A bridge takes the staller's slot, and proves the token.
	joinConn(t, f.srv, "bridge")
	staller.SetReadDeadline(time.Now().Add(failAfter))
	if _, _, err := staller.ReadMessage(); err == nil || isTimeout(err) {
		t.Fatalf("the staller: %v; want its connection closed", err)
	}
}

// isTimeout reports whether err is a read deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

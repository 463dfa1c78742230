package endpoint

import (
	"context"
	"net/http"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// silentFlood is an attacker without the token that holds /join
// connections open without ever sending its challenge, reopening each as
// soon as the hub closes it, and trying again at once when refused.
type silentFlood struct {
	addr string
	stop chan struct{}
	wg   sync.WaitGroup

	// mu guards held and conns; changed is closed when held changes.
	mu      sync.Mutex
	held    int
	conns   map[*websocket.Conn]struct{}
	changed chan struct{}
}

// startSilentFlood opens n silent /join connections to addr and keeps
// them open until the test ends.
func startSilentFlood(t *testing.T, addr string, n int) *silentFlood {
	t.Helper()
	f := &silentFlood{addr: addr, stop: make(chan struct{}), conns: map[*websocket.Conn]struct{}{}, changed: make(chan struct{})}
	for range n {
		f.wg.Add(1)
		go f.hold()
	}
	t.Cleanup(func() {
		close(f.stop)
		f.mu.Lock()
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

// hold keeps one slot: a silent connection, reopened whenever it ends.
func (f *silentFlood) hold() {
	defer f.wg.Done()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		c, resp, err := d.Dial("ws://"+f.addr+proof.Path, nil)
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
				select { // every slot is taken: ask again shortly
				case <-time.After(5 * time.Millisecond):
				case <-f.stop:
					return
				}
			}
			continue
		}
		f.count(c, 1)
		c.ReadMessage() // silent until the hub closes it
		c.Close()
		f.count(c, -1)
	}
}

func (f *silentFlood) count(c *websocket.Conn, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d > 0 {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	f.held += d
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitHeld waits until the attacker holds n connections at once.
func (f *silentFlood) waitHeld(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(procWait)
	for {
		f.mu.Lock()
		held, changed := f.held, f.changed
		f.mu.Unlock()
		if held >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the attacker holds %d /join connections; want %d", held, n)
		}
	}
}

// TestAttackJoinLockoutWithoutAToken replays issue 21's fourth attack on
// real processes: a peer without the token holds every /join slot of the
// hub with silent WebSockets, reopening each as it closes. A bridge that
// starts on the hub's port still joins it, and the operators' command
// line still reaches the hub.
func TestAttackJoinLockoutWithoutAToken(t *testing.T) {
	t.Parallel()
	bin, server := binaries(t)
	_, addr := startHub(t, "hub", "127.0.0.1:0")
	flood := startSilentFlood(t, addr, maxProving)
	flood.waitHeld(t, maxProving)

	b := startProc(t, "second-bridge", bin, "--listen", addr, "--token", procToken, "--state-dir", t.TempDir(), "--log-dir", "off", "--agent", "second", "--", server)
	if !b.says(t, "joining it as an emitter") {
		t.Errorf("a bridge started on the hub's port did not join it while the attacker held every /join slot:\n%s", b.stderr.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), procWait)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "pending", "--endpoint", "http://"+addr, "--token", procToken).CombinedOutput()
	if err != nil {
		t.Errorf("aep-mcp-bridge pending while the attacker held every /join slot: %v\n%s", err, out)
	}
}

package endpoint

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// The tests in attack_*_test.go replay attacks on running processes: a
// hub, bridges that join it, built from cmd/aep-mcp-bridge, and a test
// peer server that elicits. This file holds what they share.

// procToken is the shared token of the processes under attack; the
// attacker holds it too.
const procToken = "attack-token-0123456789abcdefghijklmnopq"

// procWait bounds every wait on a process; it is a failure guard, never
// the thing waited for.
const procWait = 60 * time.Second

// built holds the binaries, built once per test binary.
var built = sync.OnceValues(func() ([2]string, error) {
	root, err := testenv.TempRoot()
	if err != nil {
		return [2]string{}, err
	}
	bins := [2]string{filepath.Join(root, "aep-mcp-bridge"), filepath.Join(root, "elicitserver")}
	for i, pkg := range []string{"../cmd/aep-mcp-bridge", "../internal/testpeers/elicitserver"} {
		if out, err := exec.Command("go", "build", "-o", bins[i], pkg).CombinedOutput(); err != nil {
			return [2]string{}, fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}
	return bins, nil
})

// binaries returns the bridge's binary and the eliciting test server's.
func binaries(t *testing.T) (bridgeBin, serverBin string) {
	t.Helper()
	bins, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bins[0], bins[1]
}

// proc is a running process under test: its stdin and stdout are pipes
// the test holds (a bridge's MCP client side), its stderr a buffer.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *testenv.Buffer
	done   chan struct{}
}

// startProc runs bin with args until the test ends, then interrupts it
// as a user would (and kills it if it does not stop).
func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), stderr: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = p.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.wait()
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(procWait):
			p.cmd.Process.Kill()
			<-p.done
			t.Errorf("%s did not stop on SIGINT", name)
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", name, p.stderr.String())
		}
	})
	return p
}

// wait reaps the process; it is the goroutine startProc starts.
func (p *proc) wait() {
	p.cmd.Wait()
	close(p.done)
}

// kill ends the process with SIGKILL, as kill -9 does, and waits for it.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	<-p.done
}

// says waits until the process's stderr holds s, and reports false when
// the process ends first.
func (p *proc) says(t *testing.T, s string) bool {
	t.Helper()
	deadline := time.After(procWait)
	for {
		changed := p.stderr.Changed()
		if strings.Contains(p.stderr.String(), s) {
			return true
		}
		select {
		case <-changed:
		case <-p.done:
			return strings.Contains(p.stderr.String(), s)
		case <-deadline:
			t.Fatalf("%s never said %q:\n%s", p.name, s, p.stderr.String())
		}
	}
}

// endpointRe finds the address a bridge announces its endpoint on.
var endpointRe = regexp.MustCompile(`AEP endpoint on http://([0-9.:]+)`)

// startHub runs a bridge that serves the AEP endpoint on addr (port 0 for
// any) and returns it with the address it serves. extra flags go before
// the upstream command.
func startHub(t *testing.T, name, addr string, extra ...string) (*proc, string) {
	t.Helper()
	bin, _ := binaries(t)
	args := append([]string{"--listen", addr, "--token", procToken, "--state-dir", t.TempDir(), "--log-dir", "off", "--agent", name}, extra...)
	p := startProc(t, name, bin, append(args, "--", "cat")...)
	p.stderr.WaitFor(t, "operator inbox at", procWait)
	m := endpointRe.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("%s announced no endpoint:\n%s", name, p.stderr.String())
	}
	return p, m[1]
}

// gate is a TCP forwarder to a hub that a test opens and closes: while it
// is closed, every connection is closed at once, so a bridge that joins
// the hub through it reconnects only when the test lets it.
type gate struct {
	ln net.Listener
	to string

	// mu guards open and conns.
	mu    sync.Mutex
	open  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startGate forwards a port of its own to addr, open at first.
func startGate(t *testing.T, addr string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, to: addr, open: true, conns: map[net.Conn]struct{}{}}
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(func() {
		ln.Close()
		g.closeAll()
		g.wg.Wait()
	})
	return g
}

// addr is the gate's own address.
func (g *gate) addr() string { return g.ln.Addr().String() }

// set opens or closes the gate; closing also cuts what passes now.
func (g *gate) set(open bool) {
	g.mu.Lock()
	g.open = open
	g.mu.Unlock()
	if !open {
		g.closeAll()
	}
}

func (g *gate) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		c.Close()
	}
}

func (g *gate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		open := g.open
		g.mu.Unlock()
		if !open {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", g.to)
		if err != nil {
			c.Close()
			continue
		}
		g.mu.Lock()
		g.conns[c], g.conns[up] = struct{}{}, struct{}{}
		g.mu.Unlock()
		g.wg.Add(2)
		go g.pipe(c, up)
		go g.pipe(up, c)
	}
}

// pipe copies one direction; either side ending ends both.
func (g *gate) pipe(dst, src net.Conn) {
	defer g.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	g.mu.Lock()
	delete(g.conns, src)
	delete(g.conns, dst)
	g.mu.Unlock()
}

// peer is a connection of the attacker's (or an operator's) to a hub,
// read by a goroutine of its own.
type peer struct {
	t      *testing.T
	c      *websocket.Conn
	frames chan map[string]any
}

// joinPeer proves the token at addr's /join, as any token holder can, and
// says hello as an emitter named agent/instance; it returns the peer and
// the endpoint's hello.
func joinPeer(t *testing.T, addr, agent, instance string) *peer {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+proof.Path, nil)
	if err != nil {
		t.Fatalf("dialing /join of %s: %v", addr, err)
	}
	b, challenge, err := proof.NewBridge(procToken, addr, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(procWait))
	c.WriteMessage(websocket.TextMessage, challenge)
	_, response, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("the hub's proof: %v", err)
	}
	finish, err := b.Verify(response)
	if err != nil {
		t.Fatalf("the hub's proof: %v", err)
	}
	c.WriteMessage(websocket.TextMessage, finish)
	c.SetReadDeadline(time.Time{})
	return helloPeer(t, c, agent, instance)
}

// helloPeer says hello on c as an emitter named agent/instance and reads
// c until the test ends.
func helloPeer(t *testing.T, c *websocket.Conn, agent, instance string) *peer {
	t.Helper()
	c.WriteMessage(websocket.TextMessage, []byte(emitterHello(agent, instance, "")))
	p := &peer{t: t, c: c, frames: make(chan map[string]any, 1024)}
	done := make(chan struct{})
	go p.read(done)
	t.Cleanup(func() { c.Close(); <-done })
	if f := p.next(); f["type"] != "hello" {
		t.Fatalf("the hub answered hello with %v", f)
	}
	return p
}

// read is the peer's reader goroutine.
func (p *peer) read(done chan struct{}) {
	defer close(done)
	defer close(p.frames)
	for {
		_, b, err := p.c.ReadMessage()
		if err != nil {
			return
		}
		var f map[string]any
		json.Unmarshal(b, &f)
		p.frames <- f
	}
}

// next returns the next frame.
func (p *peer) next() map[string]any {
	p.t.Helper()
	select {
	case f, ok := <-p.frames:
		if !ok {
			p.t.Fatal("the hub closed the connection")
		}
		return f
	case <-time.After(procWait):
		p.t.Fatal("the hub sent nothing")
	}
	return nil
}

// sendEvent sends an event and returns the error frame it draws, or nil,
// by pinging after it: frames are answered in order. Commands that reach
// the peer meanwhile go to cmds.
func (p *peer) sendEvent(ev string, cmds chan<- map[string]any) map[string]any {
	p.t.Helper()
	p.c.WriteMessage(websocket.TextMessage, []byte(ev))
	p.c.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping","t":"after"}`))
	var refusal map[string]any
	for {
		f := p.next()
		switch {
		case f["type"] == "pong" && f["t"] == "after":
			return refusal
		case f["type"] == "error":
			refusal = f
		case strings.HasPrefix(fmt.Sprint(f["type"]), "control.") && cmds != nil:
			cmds <- f
		}
	}
}

// streamEvents follows a hub's SSE stream (with the token) and sends each
// event of type typ to the returned channel until the test ends.
func streamEvents(t *testing.T, addr, filter string) <-chan map[string]any {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/stream?filter="+filter, nil)
	req.Header.Set("Authorization", "Bearer "+procToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	out := make(chan map[string]any, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for _, line := range sseLines(resp.Body) {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) == nil {
				out <- ev
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return out
}

// sseLines yields the data lines of an SSE body until it ends.
func sseLines(body io.Reader) func(func(int, string) bool) {
	return func(yield func(int, string) bool) {
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for n := 0; sc.Scan(); {
			if s, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				if !yield(n, s) {
					return
				}
				n++
			}
		}
	}
}

package gateway

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// buildBridge builds cmd/aep-mcp-bridge once per test binary, without the
// race detector whatever the tests run with, so what a test measures of
// its process is what a user runs.
var buildBridge = sync.OnceValues(func() (string, error) {
	dir, err := testenv.TempRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "aep-mcp-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/aep-mcp-bridge").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building aep-mcp-bridge: %v\n%s", err, out)
	}
	return bin, nil
})

// serveProcess is `aep-mcp-bridge serve` running as a process of its own.
type serveProcess struct {
	cmd    *exec.Cmd
	addr   string // where it serves MCP clients
	stderr *testenv.Buffer
}

var gatewayLine = regexp.MustCompile(`MCP gateway on http://([^/\s]+)/mcp`)

// startServe runs `aep-mcp-bridge serve` with no AEP endpoint and no
// client token on a loopback port, in front of the mcp-go test server,
// with extra flags; it stops when the test ends.
func startServe(t *testing.T, extra ...string) *serveProcess {
	t.Helper()
	bin, err := buildBridge()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--listen", "off", "--mcp-auth", "none", "--mcp-listen", "127.0.0.1:0",
		"--log-dir", "off", "--state-dir", t.TempDir()}, extra...)
	p := &serveProcess{cmd: exec.Command(bin, append(args, "--", serverBin)...), stderr: &testenv.Buffer{}}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(waitLimit):
			p.cmd.Process.Kill()
			<-exited
			t.Errorf("serve did not stop on SIGTERM within %v", waitLimit)
		}
	})
	p.stderr.WaitFor(t, "MCP gateway on http://", waitLimit)
	m := gatewayLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no address in serve's output:\n%s", p.stderr.String())
	}
	p.addr = m[1]
	return p
}

// gw returns a handle for the raw client helpers on the process.
func (p *serveProcess) gw(t *testing.T) *gw {
	return &gw{t: t, base: "http://" + p.addr, mcpURL: "http://" + p.addr + "/mcp"}
}

// peakRSS is the most resident memory the process has used (VmHWM).
func (p *serveProcess) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("reading the gateway's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("reading VmHWM from %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", p.cmd.Process.Pid)
	return 0
}

// openUnread opens c's GET stream on a raw connection and reads the
// response's head and nothing more; the reader holds what follows it.
func openUnread(t *testing.T, addr string, c *raw) (net.Conn, *bufio.Reader) {
	t.Helper()
	return openRaw(t, addr, "/mcp", fmt.Sprintf("Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", c.id))
}

// openRaw GETs path as an event stream on a raw connection, with the
// test token and the extra header lines, and reads the response's head.
// The connection's receive buffer is fixed at 64 KiB before it connects,
// so the kernel cannot absorb tens of megabytes for a client that does
// not read (Linux grows it up to net.ipv4.tcp_rmem's maximum otherwise).
func openRaw(t *testing.T, addr, path, extra string) (net.Conn, *bufio.Reader) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		return err
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n%s\r\n", path, addr, mcpToken, extra)
	br := bufio.NewReaderSize(conn, 16)
	conn.SetReadDeadline(time.Now().Add(waitLimit))
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("GET /mcp: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the GET stream's head: %v", err)
		}
		if line == "\r\n" {
			return conn, br
		}
	}
}

// floodBytes is what the server writes in TestUnreadStreamStaysBounded:
// 256 MiB, or AEP_GATEWAY_FLOOD_BYTES (issue 21's attack wrote 1.2 GiB:
// 1288490189).
func floodBytes(t *testing.T) int {
	if v := os.Getenv("AEP_GATEWAY_FLOOD_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("AEP_GATEWAY_FLOOD_BYTES=%q: want a number of bytes", v)
		}
		return n
	}
	return 256 << 20
}

// TestUnreadStreamStaysBounded is issue 21 item 2: a client opens its
// GET stream and never reads it while its server writes hundreds of
// megabytes of notifications. The gateway, a real `aep-mcp-bridge serve`
// process with its default bounds, closes the stream once what waits for
// the reader passes its bound, says why in its log, and its resident
// memory never reaches 200 MB.
func TestUnreadStreamStaysBounded(t *testing.T) {
	t.Parallel()
	const ceiling = 200_000_000
	flood := floodBytes(t)
	p := startServe(t)
	g := p.gw(t)
	c := rawSession(t, g, "never-reads", false)
	conn, _ := openUnread(t, p.addr, c)
	began := time.Now()
	got := readAll(t, c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood","arguments":{"bytes":%d}}}`, flood)))
	took := time.Since(began)
	peak := p.peakRSS(t)
	t.Logf("the server was to write %d MiB; after %v the gateway's peak RSS was %.1f MB, and the flood call got %.220s", flood>>20, took.Round(time.Millisecond), float64(peak)/1e6, strings.Join(got, " "))
	if peak >= ceiling {
		t.Errorf("the gateway's peak RSS: %d bytes; want under %d", peak, ceiling)
	}
	why := regexp.MustCompile(`.*closing a stream its client does not read.*`).FindString(p.stderr.String())
	if why == "" {
		t.Errorf("the gateway's log does not say why it closed the stream:\n%.2000s", p.stderr.String())
	}
	t.Logf("the gateway's log: %s", why)
	conn.SetReadDeadline(time.Now().Add(waitLimit))
	if n, err := io.Copy(io.Discard, conn); err != nil {
		t.Errorf("the unread stream was still open %v after the flood (%d bytes read from it): %v", waitLimit, n, err)
	}
	rawSession(t, g, "after the flood", false) // the gateway serves on
}

// TestUnreadStreamResumes: a client that stops reading its GET stream
// while its server floods it (bounds made small here) has its
// connection closed, the log saying why. Resuming with the Last-Event-ID
// of the last event it read, as often as it is closed again for falling
// behind, it gets every notification, once and in order.
func TestUnreadStreamResumes(t *testing.T) {
	const n, size = 192, 64 << 10 // 12 MiB, within the resumption window
	var log testenv.Buffer
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), MaxBuffered: 32 << 20, StreamBuffered: 256 << 10,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	c := rawSession(t, g, "slow-reader", false)
	addr := strings.TrimPrefix(g.base, "http://")
	conn, body := openUnread(t, addr, c)
	call := make(chan []string, 1)
	go func() {
		call <- readAll(t, c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood","arguments":{"bytes":%d,"size":%d}}}`, n*size, size)))
	}()
	// The first event, then nothing more.
	first, ok := events(t, &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(httputil.NewChunkedReader(body))})()
	if !ok || first.id == "" || !strings.Contains(first.data, `"seq":0`) {
		t.Fatalf("the GET stream's first event: %+v", first)
	}
	log.WaitFor(t, "closing a stream its client does not read", waitLimit)
	if got := <-call; len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("flooded %d notifications", n)) {
		t.Fatalf("the flood call: got %.300v", got)
	}
	conn.Close()
	last, resumed := first.id, 0
	for want := 1; want < n; {
		if resumed++; resumed > n {
			t.Fatalf("resumed %d times and got notifications up to %d of %d", resumed, want-1, n)
		}
		next := events(t, c.get(last))
		for want < n {
			ev, ok := next()
			if !ok {
				break // closed for falling behind again: resume
			}
			var m struct {
				Params struct {
					Data struct {
						Seq int `json:"seq"`
					} `json:"data"`
				} `json:"params"`
			}
			jsonUnmarshal(t, ev.data, &m)
			if m.Params.Data.Seq != want {
				t.Fatalf("after resuming from %s, the stream carried notification %d; want %d", last, m.Params.Data.Seq, want)
			}
			last, want = ev.id, want+1
		}
	}
	t.Logf("every notification arrived, resuming %d times", resumed)
}

// TestUnreadLegacyStreamEndsItsSession: an HTTP+SSE stream cannot be
// resumed, so a client that stops reading it while its server floods it
// loses its session once more than the bound waits, the log saying why.
func TestUnreadLegacyStreamEndsItsSession(t *testing.T) {
	var log testenv.Buffer
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), MaxBuffered: 1 << 20, StreamBuffered: 256 << 10,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	_, body := openRaw(t, strings.TrimPrefix(g.base, "http://"), "/sse", "")
	next := events(t, &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(httputil.NewChunkedReader(body))})
	endpoint, ok := next()
	if !ok || !strings.HasPrefix(endpoint.data, "/message?sessionId=") {
		t.Fatalf("the stream's first event: %+v; want the endpoint", endpoint)
	}
	post := func(msg string) {
		t.Helper()
		h := http.Header{"Authorization": {"Bearer " + mcpToken}, "Content-Type": {"application/json"}}
		if code, m := status(t, g.request(t, "POST", endpoint.data, h, msg)); code != http.StatusAccepted {
			t.Fatalf("POST %s: got %d %q", msg, code, m)
		}
	}
	post(initBody)
	if ev, ok := next(); !ok || !strings.Contains(ev.data, `"protocolVersion"`) {
		t.Fatalf("the initialize result: %+v", ev)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{"bytes":67108864}}}`)
	log.WaitFor(t, "ending the session: its client does not read its stream", waitLimit)
	g.waitSessions(t, 0)
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
)

const fanoutToken = "bench-token"

// fanoutServer runs an endpoint with one emitting session in its own
// process, so its memory is measured apart from the subscribers'. It reads
// commands on stdin: "mem" prints the heap and stack in use; "emit N R"
// emits N events at R per second (0: as fast as possible) and prints "done".
func fanoutServer() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hub := bus.NewHub()
	ep, err := endpoint.New(endpoint.Options{Token: fanoutToken, Hub: hub})
	if err != nil {
		return err
	}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "bench", Session: "s1", Host: "bench", Sinks: []bus.Sink{hub}})
	if err != nil {
		return err
	}
	go http.Serve(ln, ep.Handler())
	fmt.Println(ln.Addr().String())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && f[0] == "conns":
			fmt.Println(ep.Connections())
		case len(f) == 1 && f[0] == "mem":
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Println(m.HeapInuse + m.StackInuse)
		case len(f) == 3 && f[0] == "emit":
			n, _ := strconv.Atoi(f[1])
			rate, _ := strconv.Atoi(f[2])
			var tick <-chan time.Time
			if rate > 0 {
				t := time.NewTicker(time.Second / time.Duration(rate))
				tick = t.C
				defer t.Stop()
			}
			for i := 0; i < n; i++ {
				if tick != nil {
					<-tick
				}
				em.Emit(aep.Draft{Type: "progress.status", Severity: aep.SeverityNotice, Capture: aep.CaptureMetadata,
					Data: map[string]any{"phase": strconv.FormatInt(time.Now().UnixNano(), 10)}})
			}
			fmt.Println("done")
		}
	}
	return nil
}

type fanoutResult struct {
	deliveries int64
	elapsed    time.Duration
	p50, p99   time.Duration
	perIdle    float64
	stalledEnd string
	dropped    int64
}

// runFanout measures one emitting session fanned out to WS and SSE
// subscribers on loopback, and again with one stalled subscriber.
func runFanout(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	nWS := fs.Int("ws", 100, "WebSocket subscribers")
	nSSE := fs.Int("sse", 100, "SSE subscribers")
	events := fs.Int("events", 20000, "events emitted per run")
	rate := fs.Int("rate", 1000, "events per second emitted (0: unpaced)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Printf("one emitting session → %d WebSocket + %d SSE subscribers on loopback; %d notice events at %d/s per run\n\n", *nWS, *nSSE, *events, *rate)
	fmt.Println("| run | deliveries | deliveries/s | p50 publish→delivery | p99 publish→delivery | memory per idle subscriber | healthy subscribers dropped | stalled subscriber |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, stalled := range []bool{false, true} {
		r, err := fanoutRun(*nWS, *nSSE, *events, *rate, stalled)
		if err != nil {
			return err
		}
		name := "baseline"
		if stalled {
			name = "one stalled WS subscriber"
		}
		fmt.Printf("| %s | %d | %.0f | %s | %s | %.1f KiB | %d | %s |\n", name, r.deliveries, float64(r.deliveries)/r.elapsed.Seconds(),
			r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.perIdle/1024, r.dropped, r.stalledEnd)
	}
	return nil
}

// fanoutProc is the fanout-server subprocess and its command pipes.
type fanoutProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	addr string
}

// startFanoutServer starts the fanout-server subprocess.
func startFanoutServer() (*fanoutProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "fanout-server")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &fanoutProc{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	p.addr = p.line()
	return p, nil
}

func (p *fanoutProc) line() string { p.out.Scan(); return p.out.Text() }

// mem is the server's heap and stack in use.
func (p *fanoutProc) mem() uint64 {
	fmt.Fprintln(p.in, "mem")
	v, _ := strconv.ParseUint(p.line(), 10, 64)
	return v
}

// conns is how many subscribers the server holds.
func (p *fanoutProc) conns() int {
	fmt.Fprintln(p.in, "conns")
	n, _ := strconv.Atoi(p.line())
	return n
}

func (p *fanoutProc) stop() { p.in.Close(); p.cmd.Process.Kill(); p.cmd.Wait() }

// recorder collects the publish-to-delivery latencies of a run.
type recorder struct {
	mu        sync.Mutex
	lat       []time.Duration
	delivered atomic.Int64
	ended     atomic.Int64 // subscribers whose stream ended during the run
}

// record notes one delivered event, stamped by the server with its
// publication time.
func (r *recorder) record(data []byte) {
	var ev struct {
		Data struct {
			Phase string `json:"phase"`
		} `json:"data"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Data.Phase == "" {
		return
	}
	ns, _ := strconv.ParseInt(ev.Data.Phase, 10, 64)
	d := time.Since(time.Unix(0, ns))
	r.mu.Lock()
	r.lat = append(r.lat, d)
	r.mu.Unlock()
	r.delivered.Add(1)
}

// subscribeWS connects n WebSocket subscribers that read until closed.
func (r *recorder) subscribeWS(addr string, n int) ([]*websocket.Conn, error) {
	var conns []*websocket.Conn
	for i := 0; i < n; i++ {
		c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/socket?access_token="+fanoutToken, nil)
		if err != nil {
			return conns, err
		}
		conns = append(conns, c)
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer"}`))
		c.ReadMessage()
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","id":"s"}`))
		c.ReadMessage()
		go func() {
			defer r.ended.Add(1)
			for {
				_, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				r.record(b)
			}
		}()
	}
	return conns, nil
}

// subscribeSSE connects n SSE subscribers that read until ctx ends.
func (r *recorder) subscribeSSE(ctx context.Context, addr string, n int) error {
	var ready sync.WaitGroup
	for i := 0; i < n; i++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/stream?access_token="+fanoutToken, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		ready.Add(1)
		go func() {
			defer r.ended.Add(1)
			ready.Done()
			readSSE(resp.Body, r.record)
		}()
	}
	ready.Wait()
	return nil
}

// stallSubscriber connects a WebSocket subscriber that never reads, with
// a small receive buffer so the stall backs up into the endpoint instead
// of disappearing into the kernel's loopback buffers.
func stallSubscriber(addr string) (*websocket.Conn, error) {
	d := websocket.Dialer{NetDial: func(network, a string) (net.Conn, error) {
		c, err := net.Dial(network, a)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		return c, err
	}}
	c, _, err := d.Dial("ws://"+addr+"/socket?access_token="+fanoutToken, nil)
	if err != nil {
		return nil, err
	}
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer"}`))
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","id":"s"}`))
	return c, nil
}

// stalledOutcome says whether the endpoint let the stalled subscriber go
// (its queue fills, its write deadline passes) rather than hold it.
func stalledOutcome(p *fanoutProc, nWS int) string {
	start := time.Now()
	for p.conns() > nWS && time.Since(start) < 30*time.Second {
		time.Sleep(50 * time.Millisecond) // the bench's own poll of the server, bounded
	}
	if p.conns() == nWS {
		return fmt.Sprintf("dropped by the endpoint (%s after the run)", time.Since(start).Round(100*time.Millisecond))
	}
	return "still connected 30 s after the run"
}

// fanoutRun measures one run: nWS + nSSE subscribers (and a stalled one
// when stalled), events emitted at rate.
func fanoutRun(nWS, nSSE, events, rate int, stalled bool) (fanoutResult, error) {
	p, err := startFanoutServer()
	if err != nil {
		return fanoutResult{}, err
	}
	defer p.stop()
	before := p.mem()
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ws, err := rec.subscribeWS(p.addr, nWS)
	for _, c := range ws {
		defer c.Close()
	}
	if err != nil {
		return fanoutResult{}, err
	}
	if err := rec.subscribeSSE(ctx, p.addr, nSSE); err != nil {
		return fanoutResult{}, err
	}
	subs := nWS + nSSE
	if stalled {
		stall, err := stallSubscriber(p.addr)
		if err != nil {
			return fanoutResult{}, err
		}
		defer stall.Close()
		subs++
	}
	perIdle := float64(int64(p.mem())-int64(before)) / float64(subs)

	want := int64(events * (nWS + nSSE))
	start := time.Now()
	fmt.Fprintf(p.in, "emit %d %d\n", events, rate)
	p.line() // done
	deadline := time.Now().Add(60 * time.Second)
	for rec.delivered.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the bench's own completion poll, bounded; no assertion depends on it
	}
	elapsed := time.Since(start)
	stalledEnd := "—"
	if stalled {
		stalledEnd = stalledOutcome(p, nWS)
	}
	rec.mu.Lock()
	sort.Slice(rec.lat, func(i, j int) bool { return rec.lat[i] < rec.lat[j] })
	r := fanoutResult{deliveries: rec.delivered.Load(), elapsed: elapsed, perIdle: perIdle, stalledEnd: stalledEnd, dropped: rec.ended.Load()}
	if n := len(rec.lat); n > 0 {
		r.p50, r.p99 = rec.lat[n/2], rec.lat[n*99/100]
	}
	rec.mu.Unlock()
	cancel()
	return r, nil
}

// readSSE calls record with the data of each event of an SSE subscriber's
// stream until it ends, then closes it. An event over 1 MiB ends it.
func readSSE(body io.ReadCloser, record func([]byte)) {
	defer body.Close()
	r := sse.NewReader(body, sse.Options{MaxEventSize: 1 << 20})
	for {
		ev, err := r.Next()
		if err != nil {
			return
		}
		record(ev.Data)
	}
}

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

func fanoutRun(nWS, nSSE, events, rate int, stalled bool) (fanoutResult, error) {
	self, err := os.Executable()
	if err != nil {
		return fanoutResult{}, err
	}
	cmd := exec.Command(self, "fanout-server")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return fanoutResult{}, err
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	out := bufio.NewScanner(outPipe)
	line := func() string { out.Scan(); return out.Text() }
	addr := line()
	mem := func() uint64 { fmt.Fprintln(in, "mem"); v, _ := strconv.ParseUint(line(), 10, 64); return v }
	before := mem()

	var (
		mu        sync.Mutex
		lat       []time.Duration
		delivered atomic.Int64
		ended     atomic.Int64 // subscribers whose stream ended during the run
		wg        sync.WaitGroup
		ready     sync.WaitGroup
	)
	want := int64(events * (nWS + nSSE))
	record := func(data []byte) {
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
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		delivered.Add(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < nWS; i++ {
		c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/socket?access_token="+fanoutToken, nil)
		if err != nil {
			return fanoutResult{}, err
		}
		defer c.Close()
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer"}`))
		c.ReadMessage()
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","id":"s"}`))
		c.ReadMessage()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ended.Add(1)
			for {
				_, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				record(b)
			}
		}()
	}
	for i := 0; i < nSSE; i++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/stream?access_token="+fanoutToken, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fanoutResult{}, err
		}
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ended.Add(1)
			ready.Done()
			readSSE(resp.Body, record)
		}()
	}
	ready.Wait()
	var stall *websocket.Conn
	stalledEnd := "—"
	if stalled {
		// A small receive buffer, so the stall backs up into the endpoint
		// instead of disappearing into the kernel's loopback buffers.
		d := websocket.Dialer{NetDial: func(network, a string) (net.Conn, error) {
			c, err := net.Dial(network, a)
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetReadBuffer(4096)
			}
			return c, err
		}}
		stall, _, err = d.Dial("ws://"+addr+"/socket?access_token="+fanoutToken, nil)
		if err != nil {
			return fanoutResult{}, err
		}
		defer stall.Close()
		stall.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"consumer"}`))
		stall.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","id":"s"}`))
		// It never reads again.
	}
	after := mem()
	subs := nWS + nSSE
	if stalled {
		subs++
	}
	perIdle := float64(int64(after)-int64(before)) / float64(subs)

	start := time.Now()
	fmt.Fprintf(in, "emit %d %d\n", events, rate)
	line() // done
	deadline := time.Now().Add(60 * time.Second)
	for delivered.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the bench's own completion poll, bounded; no assertion depends on it
	}
	elapsed := time.Since(start)
	if stalled {
		// The endpoint must let the stalled subscriber go (its queue
		// fills, its write deadline passes) rather than hold it forever.
		conns := func() int { fmt.Fprintln(in, "conns"); n, _ := strconv.Atoi(line()); return n }
		stallStart := time.Now()
		for conns() > nWS && time.Since(stallStart) < 30*time.Second {
			time.Sleep(50 * time.Millisecond) // the bench's own poll of the server, bounded
		}
		if conns() == nWS {
			stalledEnd = fmt.Sprintf("dropped by the endpoint (%s after the run)", time.Since(stallStart).Round(100*time.Millisecond))
		} else {
			stalledEnd = "still connected 30 s after the run"
		}
	}
	mu.Lock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r := fanoutResult{deliveries: delivered.Load(), elapsed: elapsed, perIdle: perIdle, stalledEnd: stalledEnd, dropped: ended.Load()}
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	mu.Unlock()
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

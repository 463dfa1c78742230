package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
)

// floodServer is a raw JSON-RPC MCP server: its "flood" tool sends n
// elicitation/create requests at once (question i asks for the integer i),
// waits for every answer, checks each, and reports how many were correct.
func floodServer() error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	var wmu sync.Mutex
	write := func(v any) {
		b, _ := json.Marshal(v)
		wmu.Lock()
		os.Stdout.Write(append(b, '\n'))
		wmu.Unlock()
	}
	var (
		mu      sync.Mutex
		want    = map[string]int{}
		correct int
		callID  json.RawMessage
	)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result struct {
				Action  string `json:"action"`
				Content struct {
					I json.Number `json:"i"`
				} `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "initialize":
			write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": "2025-11-25",
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "flood", "version": "1"}}})
		case m.Method == "tools/call":
			var p struct {
				Arguments struct {
					N int `json:"n"`
				} `json:"arguments"`
			}
			json.Unmarshal(m.Params, &p)
			mu.Lock()
			callID = m.ID
			for i := 0; i < p.Arguments.N; i++ {
				want[fmt.Sprintf("q%d", i)] = i
			}
			mu.Unlock()
			for i := 0; i < p.Arguments.N; i++ {
				write(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("q%d", i), "method": "elicitation/create", "params": map[string]any{
					"message":         fmt.Sprintf("question %d", i),
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"i": map[string]any{"type": "integer"}}, "required": []string{"i"}}}})
			}
		case m.Method == "" && len(m.ID) > 0:
			var id string
			json.Unmarshal(m.ID, &id)
			mu.Lock()
			i, ok := want[id]
			delete(want, id)
			if ok && m.Result.Action == "accept" && m.Result.Content.I.String() == strconv.Itoa(i) {
				correct++
			}
			left, c, cid := len(want), correct, callID
			mu.Unlock()
			if ok && left == 0 {
				write(map[string]any{"jsonrpc": "2.0", "id": cid, "result": map[string]any{"content": []any{
					map[string]any{"type": "text", "text": fmt.Sprintf("correct %d", c)}}}})
			}
		case m.Method == "ping":
			write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		}
	}
	return in.Err()
}

var questionRe = regexp.MustCompile(`^question (\d+)$`)

// runPending raises n questions at once through in-process bridges, each
// in front of a flood server of its own and holding at most -per-session
// of them (a session holds at most attention.DefaultMaxOpen open
// questions), ingests sessions of noise, lets a late operator count the
// open questions it sees, has an operator answer them all, and reports
// correctness, latency and memory.
func runPending(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pending", flag.ContinueOnError)
	n := fs.Int("n", 1000, "questions pending at once")
	perSession := fs.Int("per-session", 200, "questions each bridge session holds")
	noiseSessions := fs.Int("noise", 300, "sessions of ingested noise before the late operator connects")
	wait := fs.Duration("wait", 5*time.Minute, "how long the run may take before it gives up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *perSession < 1 || *perSession > attention.DefaultMaxOpen {
		return fmt.Errorf("-n must be positive and -per-session from 1 to %d", attention.DefaultMaxOpen)
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h, err := bridge.NewHost(bridge.HostOptions{Listener: ln, Token: pendingToken})
	if err != nil {
		ln.Close()
		return err
	}
	defer h.Close(context.Background())
	sub := h.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, *n+16)
	var floods []*flood
	defer func() {
		for _, f := range floods {
			f.stop()
		}
	}()
	for left := *n; left > 0; left -= *perSession {
		f, err := startFlood(ctx, h, self, logs, min(left, *perSession))
		if err != nil {
			return err
		}
		floods = append(floods, f)
	}
	res, err := floodAndAnswer(ctx, floods, sub, *n, func() (lateResult, error) { return lateOperator(ctx, h.Addr(), *noiseSessions) })
	if err != nil {
		return err
	}
	for _, f := range floods {
		if err := f.stop(); err != nil {
			return err
		}
	}
	res.print(*n, len(floods))
	return nil
}

// flood is one bridge session in front of a flood server, with its MCP
// client.
type flood struct {
	n      int
	b      *bridge.Bridge
	c      *client.Client
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startFlood starts a bridge session in h in front of a flood server that
// will raise n questions, and initializes its client.
func startFlood(ctx context.Context, h *bridge.Host, self, logs string, n int) (*flood, error) {
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := h.NewSession(bridge.Options{Command: []string{self, "flood-server"}, Client: c2bR, ClientOut: b2cW, LogDir: logs})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	f := &flood{n: n, b: b, cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- b.Run(runCtx); b2cW.Close() }()
	f.c = client.NewClient(transport.NewIO(b2cR, c2bW, nil), client.WithProtocolVersion("2025-11-25"))
	if err := f.c.Start(runCtx); err != nil {
		f.stop()
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := f.c.Initialize(ctx, init); err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

// stop closes the client and waits for the session to end.
func (f *flood) stop() error {
	f.once.Do(func() {
		f.c.Close()
		select {
		case f.err = <-f.done:
		case <-time.After(30 * time.Second):
			f.cancel()
			f.err = <-f.done
		}
		f.cancel()
	})
	return f.err
}

// pendingResult is what one pending run measured.
type pendingResult struct {
	pending, rejected, correct     int
	raised, answered, lastToResult time.Duration
	late                           lateResult
}

// floodAndAnswer has every flood server raise its questions in one tool
// call, lets a late operator look (late), then answers each as an
// operator would, through its session's intake. It gives up, saying how
// far it got, when ctx ends first.
func floodAndAnswer(ctx context.Context, floods []*flood, sub *bus.Subscription, n int, late func() (lateResult, error)) (pendingResult, error) {
	var res pendingResult
	type outcome struct {
		r   *mcp.CallToolResult
		err error
	}
	results := make(chan outcome, len(floods))
	bySession := map[string]*flood{}
	ids := map[*flood][]string{}
	start := time.Now()
	for _, f := range floods {
		bySession[f.b.Session()] = f
		ids[f] = make([]string, f.n)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "flood"
			req.Params.Arguments = map[string]any{"n": f.n}
			r, err := f.c.CallTool(ctx, req)
			results <- outcome{r, err}
		}()
	}
	for got := 0; got < n; got++ {
		var d *bus.Delivery
		select {
		case d = <-sub.C:
		case <-ctx.Done():
			return res, fmt.Errorf("only %d of %d questions were raised before -wait ran out", got, n)
		}
		f := bySession[d.Event.Session]
		var data aep.AttentionRequested
		json.Unmarshal(d.Event.Data, &data)
		m := questionRe.FindStringSubmatch(data.Prompt)
		if f == nil || m == nil {
			return res, fmt.Errorf("unexpected question %q in session %q", data.Prompt, d.Event.Session)
		}
		i, _ := strconv.Atoi(m[1])
		ids[f][i] = d.Event.ID
	}
	res.raised = time.Since(start)
	for _, f := range floods {
		res.pending += f.b.Manager().Len()
	}
	var err error
	if res.late, err = late(); err != nil {
		return res, err
	}
	answerStart := time.Now()
	var lastSubmit time.Time
	for _, f := range floods {
		for i, id := range ids[f] {
			data, _ := json.Marshal(aep.Respond{Answer: aep.Answer{Values: map[string]any{"i": i}}})
			cmd := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Subject: id, Time: aep.FormatTime(time.Now()),
				Source: "aep://bench/agent/operator", Agent: "operator", Session: f.b.Session(), Capture: aep.CaptureMetadata, Data: data}
			lastSubmit = time.Now()
			ack, err := f.b.Intake().Submit(cmd, control.Sender{Authenticated: true})
			if err != nil || !ack.Accepted() {
				res.rejected++
			}
		}
	}
	for range floods {
		var o outcome
		select {
		case o = <-results:
		case <-ctx.Done():
			return res, errors.New("a flood's tools/call had no result before -wait ran out")
		}
		if o.err != nil {
			return res, fmt.Errorf("flood: %w", o.err)
		}
		if len(o.r.Content) > 0 {
			if tc, ok := o.r.Content[0].(mcp.TextContent); ok {
				var c int
				fmt.Sscanf(strings.TrimSpace(tc.Text), "correct %d", &c)
				res.correct += c
			}
		}
	}
	res.lastToResult = time.Since(lastSubmit)
	res.answered = time.Since(answerStart)
	return res, nil
}

func (res pendingResult) print(n, sessions int) {
	fmt.Printf("%d questions pending at once through %d bridge sessions, answered by an in-process operator\n\n", n, sessions)
	fmt.Println("| measure | value |")
	fmt.Println("|---|---|")
	fmt.Printf("| questions pending at peak | %d |\n", res.pending)
	fmt.Printf("| answers accepted / rejected | %d / %d |\n", n-res.rejected, res.rejected)
	fmt.Printf("| answers the servers checked correct | %d of %d |\n", res.correct, n)
	fmt.Printf("| time to raise all (tools/call → last attention.requested) | %s |\n", res.raised.Round(time.Microsecond))
	fmt.Printf("| time to answer all (first command → result) | %s |\n", res.answered.Round(time.Microsecond))
	fmt.Printf("| last command → every tools/call result at its client | %s |\n", res.lastToResult.Round(time.Microsecond))
	l := res.late
	fmt.Printf("| ingested noise before the late operator connects | %d sessions, %d events, %.1f MiB |\n", l.noiseSessions, l.noiseEvents, float64(l.noiseBytes)/(1<<20))
	fmt.Printf("| late operator: `pending` (the open-question snapshot) | %d questions in %s |\n", l.pending, l.pendingTime.Round(time.Microsecond))
	fmt.Printf("| late operator: from:\"all\" WebSocket subscription, as the inbox makes | subscribed open=%d; %d distinct questions read in %s |\n", l.open, l.subscribed, l.subscribeTime.Round(time.Microsecond))
	fmt.Printf("| RSS of the process (bridge + operator + client) after the late operator | %s |\n", l.rss)
	_, peak := rss(os.Getpid())
	fmt.Printf("| peak RSS of the process (bridge + operator + client) | %.0f MB |\n", float64(peak)/1000)
}

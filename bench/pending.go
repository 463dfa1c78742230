package main

import (
	"bufio"
	"context"
	"encoding/json"
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

// runPending raises n questions at once through an in-process bridge,
// ingests sessions of noise, lets a late operator count the open questions
// it sees, has an operator answer them all, and reports correctness,
// latency and memory.
func runPending(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pending", flag.ContinueOnError)
	n := fs.Int("n", 1000, "questions pending at once")
	noiseSessions := fs.Int("noise", 300, "sessions of ingested noise before the late operator connects")
	if err := fs.Parse(args); err != nil {
		return err
	}
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
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := h.NewSession(bridge.Options{Command: []string{self, "flood-server"}, Client: c2bR, ClientOut: b2cW, LogDir: logs})
	if err != nil {
		return err
	}
	sub := h.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, *n+16)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx); b2cW.Close() }()
	c := client.NewClient(transport.NewIO(b2cR, c2bW, nil), client.WithProtocolVersion("2025-11-25"))
	if err := c.Start(runCtx); err != nil {
		return err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return err
	}
	res, err := floodAndAnswer(ctx, c, b, sub, *n, func() (lateResult, error) { return lateOperator(ctx, h.Addr(), *noiseSessions) })
	c.Close()
	if err != nil {
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	res.print(*n)
	return nil
}

// pendingResult is what one pending run measured.
type pendingResult struct {
	pending, rejected              int
	check                          string
	raised, answered, lastToResult time.Duration
	late                           lateResult
}

// floodAndAnswer has the server raise n questions in one tool call, lets
// a late operator look (late), then answers each as an operator would,
// through the session's intake.
func floodAndAnswer(ctx context.Context, c *client.Client, b *bridge.Bridge, sub *bus.Subscription, n int, late func() (lateResult, error)) (pendingResult, error) {
	var res pendingResult
	result := make(chan *mcp.CallToolResult, 1)
	start := time.Now()
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "flood"
		req.Params.Arguments = map[string]any{"n": n}
		r, err := c.CallTool(ctx, req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: flood:", err)
		}
		result <- r
	}()
	ids := make([]string, n)
	for got := 0; got < n; got++ {
		d := <-sub.C
		var data aep.AttentionRequested
		json.Unmarshal(d.Event.Data, &data)
		m := questionRe.FindStringSubmatch(data.Prompt)
		if m == nil {
			return res, fmt.Errorf("unexpected prompt %q", data.Prompt)
		}
		i, _ := strconv.Atoi(m[1])
		ids[i] = d.Event.ID
	}
	res.raised = time.Since(start)
	res.pending = b.Manager().Len()
	var err error
	if res.late, err = late(); err != nil {
		return res, err
	}
	answerStart := time.Now()
	var lastSubmit time.Time
	for i, id := range ids {
		data, _ := json.Marshal(aep.Respond{Answer: aep.Answer{Values: map[string]any{"i": i}}})
		cmd := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Subject: id, Time: aep.FormatTime(time.Now()),
			Source: "aep://bench/agent/operator", Agent: "operator", Session: b.Session(), Capture: aep.CaptureMetadata, Data: data}
		lastSubmit = time.Now()
		ack, err := b.Intake().Submit(cmd, control.Sender{Authenticated: true})
		if err != nil || !ack.Accepted() {
			res.rejected++
		}
	}
	r := <-result
	res.lastToResult = time.Since(lastSubmit)
	res.answered = time.Since(answerStart)
	if r != nil && len(r.Content) > 0 {
		if tc, ok := r.Content[0].(mcp.TextContent); ok {
			res.check = strings.TrimSpace(tc.Text)
		}
	}
	return res, nil
}

func (res pendingResult) print(n int) {
	fmt.Printf("%d questions pending at once through the bridge, answered by an in-process operator\n\n", n)
	fmt.Println("| measure | value |")
	fmt.Println("|---|---|")
	fmt.Printf("| questions pending at peak | %d |\n", res.pending)
	fmt.Printf("| answers accepted / rejected | %d / %d |\n", n-res.rejected, res.rejected)
	fmt.Printf("| server's check | %s of %d |\n", res.check, n)
	fmt.Printf("| time to raise all (tools/call → last attention.requested) | %s |\n", res.raised.Round(time.Microsecond))
	fmt.Printf("| time to answer all (first command → result) | %s |\n", res.answered.Round(time.Microsecond))
	fmt.Printf("| last command → its ElicitResult at the server → tools/call result at the client | %s |\n", res.lastToResult.Round(time.Microsecond))
	l := res.late
	fmt.Printf("| ingested noise before the late operator connects | %d sessions, %d events, %.1f MiB |\n", l.noiseSessions, l.noiseEvents, float64(l.noiseBytes)/(1<<20))
	fmt.Printf("| late operator: `pending` (the open-question snapshot) | %d questions in %s |\n", l.pending, l.pendingTime.Round(time.Microsecond))
	fmt.Printf("| late operator: from:\"all\" WebSocket subscription, as the inbox makes | subscribed open=%d; %d distinct questions read in %s |\n", l.open, l.subscribed, l.subscribeTime.Round(time.Microsecond))
	fmt.Printf("| RSS of the process (bridge + operator + client) after the late operator | %s |\n", l.rss)
	_, peak := rss(os.Getpid())
	fmt.Printf("| peak RSS of the process (bridge + operator + client) | %.0f MB |\n", float64(peak)/1000)
}

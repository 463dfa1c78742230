package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/notify"
)

// runNotify measures what --notify costs a question: n questions raised
// in paired rounds through a Host without notifications and one whose
// notifier posts every question's opening and end to webhooks that
// take -delay per request (a json and a Slack-format target). A
// question's raise time is from the server writing its
// elicitation/create (the time is in the question's one field id) to its
// attention.requested reaching a subscriber of the host's hub.
func runNotify(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("notify", flag.ContinueOnError)
	n := fs.Int("n", 1000, "questions through each host")
	rounds := fs.Int("rounds", 10, "paired rounds; each raises n/rounds questions at once per host")
	delay := fs.Duration("delay", 200*time.Millisecond, "how long the webhook receiver takes per request")
	wait := fs.Duration("wait", 10*time.Minute, "how long the run may take before it gives up")
	server := fs.Bool("raise-server", false, "be the MCP server that raises the questions (the bench starts it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *server {
		return raiseServer()
	}
	batch := *n / *rounds
	if *rounds < 1 || batch < 1 || batch > 256 {
		return errors.New("-n / -rounds must be from 1 to 256 (a session's open questions)")
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logs, _ := os.MkdirTemp("", "aep-bench-notify")
	defer os.RemoveAll(logs)

	var received atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select { // the receiver's own slowness: the scenario, not a wait
		case <-time.After(*delay):
		case <-r.Context().Done():
		}
		received.Add(1)
	}))
	defer slow.Close()

	plain, err := bridge.NewHost(bridge.HostOptions{})
	if err != nil {
		return err
	}
	defer plain.Close(context.Background())
	notified, err := bridge.NewHost(bridge.HostOptions{Notify: &notify.Options{Targets: []notify.Target{
		{Name: "json", URL: slow.URL + "/aep", Secret: strings.Repeat("s", 32)},
		{Name: "slack", URL: slow.URL + "/slack", Format: notify.Slack}}}})
	if err != nil {
		return err
	}
	hosts := []*bridge.Host{plain, notified}
	names := []string{"without --notify", "with --notify"}
	lat := make([][]time.Duration, 2)
	whole := make([][]time.Duration, 2)
	for r := range *rounds {
		for k := range 2 {
			i := (k + r) % 2 // alternate which host goes first
			l, all, err := raiseRound(ctx, hosts[i], self, logs, batch)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", names[i], r+1, err)
			}
			lat[i] = append(lat[i], l...)
			whole[i] = append(whole[i], all)
			fmt.Fprintf(os.Stderr, "round %d, %s: %d raised in %s\n", r+1, names[i], len(l), all.Round(time.Microsecond))
		}
	}
	stats := notified.Notifier().Stats()
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelClose()
	notified.Close(closeCtx) // what is still queued for the slow receiver is dropped, and counted
	final := notified.Notifier().Stats()

	fmt.Printf("%d questions per host in %d paired rounds of %d at once; webhook receiver takes %s per request; 2 targets on the notifying host\n\n",
		*n, *rounds, batch, *delay)
	fmt.Println("| measure | without --notify | with --notify | ratio |")
	fmt.Println("|---|---|---|---|")
	row := func(name string, a, b time.Duration) {
		fmt.Printf("| %s | %s µs | %s µs | %.2f |\n", name, us(a), us(b), float64(b)/float64(max(a, 1)))
	}
	for i := range lat {
		sortDurations(lat[i])
		sortDurations(whole[i])
	}
	row("raise time p50 (server write → attention.requested on the hub)", percentile(lat[0], 50), percentile(lat[1], 50))
	row("raise time p90", percentile(lat[0], 90), percentile(lat[1], 90))
	row("raise time p99", percentile(lat[0], 99), percentile(lat[1], 99))
	row(fmt.Sprintf("time to raise %d at once (median of rounds)", batch), median(whole[0]), median(whole[1]))
	fmt.Println()
	fmt.Println("| target | sent | retried | failed | dropped (queue full) | queued at the end | dropped at close |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for j, s := range stats {
		fmt.Printf("| %s (%s) | %d | %d | %d | %d | %d | %d |\n", s.Target, s.Format, final[j].Sent, s.Retried, s.Failed, s.Dropped, s.Queued, final[j].Dropped-s.Dropped)
	}
	fmt.Printf("\nrequests the receiver finished: %d; notifications made: %d (an opening and a dismissal per question, per target)\n",
		received.Load(), 2*2**n)
	return nil
}

// raiseRound raises batch questions at once through a new session on h,
// ends the session (which dismisses them), and returns each question's raise time
// and the time from the first write to the last question on the hub.
func raiseRound(ctx context.Context, h *bridge.Host, self, logs string, batch int) ([]time.Duration, time.Duration, error) {
	sub := h.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, batch+16)
	defer sub.Close()
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := h.NewSession(bridge.Options{Command: []string{self, "notify", "-raise-server"}, Client: c2bR, ClientOut: b2cW, LogDir: logs})
	if err != nil {
		return nil, 0, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx); b2cW.Close() }()
	c := client.NewClient(transport.NewIO(b2cR, c2bW, nil), client.WithProtocolVersion("2025-11-25"))
	stop := func() error {
		c.Close()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			cancel()
			return <-done
		}
	}
	if err := c.Start(runCtx); err != nil {
		stop()
		return nil, 0, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		stop()
		return nil, 0, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "raise"
	req.Params.Arguments = map[string]any{"n": batch}
	if _, err := c.CallTool(ctx, req); err != nil {
		stop()
		return nil, 0, err
	}
	var lat []time.Duration
	var first time.Time
	for len(lat) < batch {
		var d *bus.Delivery
		select {
		case d = <-sub.C:
		case <-ctx.Done():
			stop()
			return nil, 0, fmt.Errorf("%d of %d questions raised before -wait ran out", len(lat), batch)
		}
		at := time.Now()
		var data aep.AttentionRequested
		json.Unmarshal(d.Event.Data, &data)
		if len(data.Fields) != 1 || !strings.HasPrefix(data.Fields[0].ID, "t") {
			stop()
			return nil, 0, fmt.Errorf("unexpected question %s", d.Raw)
		}
		sent, _ := strconv.ParseInt(strings.SplitN(data.Fields[0].ID[1:], "_", 2)[0], 10, 64)
		if first.IsZero() || time.Unix(0, sent).Before(first) {
			first = time.Unix(0, sent)
		}
		lat = append(lat, at.Sub(time.Unix(0, sent)))
	}
	all := time.Since(first)
	// Ending the session dismisses the questions: each dismissal is a
	// notification too, so every question makes two per target.
	return lat, all, stop()
}

// raiseServer is a raw JSON-RPC MCP server whose "raise" tool sends n
// elicitation/create requests at once and returns. Question i's one field
// is t<unix nanoseconds when written>_<i>, so the bench can time it.
func raiseServer() error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	var mu sync.Mutex
	write := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		os.Stdout.Write(append(b, '\n'))
		mu.Unlock()
	}
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					N int `json:"n"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": "2025-11-25",
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "raise", "version": "1"}}})
		case "tools/call":
			for i := range m.Params.Arguments.N {
				key := fmt.Sprintf("t%d_%d", time.Now().UnixNano(), i)
				write(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("q%d", i), "method": "elicitation/create", "params": map[string]any{
					"message":         fmt.Sprintf("question %d", i),
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{key: map[string]any{"type": "boolean"}}}}})
			}
			write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "raised"}}}})
		case "ping":
			write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		}
	}
	return in.Err()
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsnode"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
)

// The two operator planes bench fleet compares.
const (
	planeLocal = "in-memory plane, 1 process"
	planeNATS  = "NATS plane"
)

// fleetResult is what one round measured on one plane.
type fleetResult struct {
	raised     time.Duration // tools/call → the last question on door A
	snapshot   time.Duration // `pending` on door A, every question in it
	ack        []time.Duration
	resolved   []time.Duration
	answerAll  time.Duration // the first answer → every tools/call result
	correct    int
	crossDoors int // questions whose owner was not door A
}

// runFleet raises -n questions across the sessions of one process on the
// in-memory plane, and across -gateways processes (in this one) on a
// 3-node NATS JetStream cluster in the process, and measures, on door A:
// when every question is there, the open-set snapshot, and each answer's
// round trip to the session that asked (ack decision) and until door A
// shows it resolved. Rounds are paired: each runs both planes, in
// alternating order; the table shows the medians of the rounds.
func runFleet(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	n := fs.Int("n", 1000, "questions open at once")
	perSession := fs.Int("per-session", 200, "questions each bridge session holds")
	gateways := fs.Int("gateways", 3, "processes (front doors) on the NATS plane")
	rounds := fs.Int("rounds", 3, "paired rounds")
	wait := fs.Duration("wait", 5*time.Minute, "how long one round of one plane may take")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *perSession < 1 || *perSession > attention.DefaultMaxOpen || *gateways < 1 || *rounds < 1 {
		return fmt.Errorf("-n, -gateways and -rounds must be positive, -per-session from 1 to %d", attention.DefaultMaxOpen)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	res := map[string][]fleetResult{}
	for r := range *rounds {
		order := []string{planeLocal, planeNATS}
		if r%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, kind := range order {
			gw := 1
			if kind == planeNATS {
				gw = *gateways
			}
			rctx, cancel := context.WithTimeout(ctx, *wait)
			out, err := fleetRound(rctx, self, kind, gw, *n, *perSession)
			cancel()
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, kind, err)
			}
			res[kind] = append(res[kind], out)
			fmt.Fprintf(os.Stderr, "round %d, %s: done\n", r+1, kind)
		}
	}
	printFleetTable(os.Stdout, *n, *gateways, *rounds, res)
	return nil
}

// fleetRound runs one round on one plane.
func fleetRound(ctx context.Context, self, kind string, gateways, n, perSession int) (fleetResult, error) {
	var res fleetResult
	dir, err := os.MkdirTemp("", "aep-bench-fleet")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var nats *natsplane.Options
	if kind == planeNATS {
		cl, err := natsnode.StartCluster(ctx, natsnode.ClusterOptions{Dir: dir, User: "bench", Password: "bench-cluster-password"})
		if err != nil {
			return res, err
		}
		defer cl.Stop()
		nats = &natsplane.Options{URLs: cl.URLs(), User: "bench", Password: "bench-cluster-password", Prefix: "bench"}
	}
	hosts := make([]*bridge.Host, 0, gateways)
	defer func() {
		for _, h := range hosts {
			closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			h.Close(closeCtx)
			cancel()
		}
	}()
	for range gateways {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return res, err
		}
		h, err := bridge.NewHost(bridge.HostOptions{Listener: ln, Token: pendingToken, NATS: nats})
		if err != nil {
			ln.Close()
			return res, err
		}
		hosts = append(hosts, h)
	}
	door := hosts[0]
	asked := door.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, n+16)
	settled := door.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.resolved" }, n+16)
	defer asked.Close()
	defer settled.Close()
	var floods []*flood
	defer func() {
		for _, f := range floods {
			f.stop()
		}
	}()
	owner := map[string]*bridge.Host{}
	for i, left := 0, n; left > 0; i, left = i+1, left-perSession {
		h := hosts[i%len(hosts)]
		f, err := startFlood(ctx, h, self, dir, min(left, perSession))
		if err != nil {
			return res, err
		}
		floods = append(floods, f)
		owner[f.b.Session()] = h
	}

	type outcome struct {
		r   *mcp.CallToolResult
		err error
	}
	results := make(chan outcome, len(floods))
	start := time.Now()
	for _, f := range floods {
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "flood"
			req.Params.Arguments = map[string]any{"n": f.n}
			r, err := f.c.CallTool(ctx, req)
			results <- outcome{r, err}
		}()
	}
	type question struct {
		session string
		i       int
	}
	questions := map[string]question{}
	for len(questions) < n {
		select {
		case d := <-asked.C:
			var data aep.AttentionRequested
			json.Unmarshal(d.Event.Data, &data)
			m := questionRe.FindStringSubmatch(data.Prompt)
			if m == nil || owner[d.Event.Session] == nil {
				return res, fmt.Errorf("unexpected question %q in session %q", data.Prompt, d.Event.Session)
			}
			i, _ := strconv.Atoi(m[1])
			questions[d.Event.ID] = question{d.Event.Session, i}
		case <-ctx.Done():
			return res, fmt.Errorf("door A saw %d of %d questions before -wait ran out", len(questions), n)
		}
	}
	res.raised = time.Since(start)

	snap := time.Now()
	open, err := (&operator.Client{Endpoint: "http://" + door.Addr(), Token: pendingToken}).Pending(ctx)
	if err != nil {
		return res, fmt.Errorf("pending on door A: %w", err)
	}
	res.snapshot = time.Since(snap)
	if len(open) != n {
		return res, fmt.Errorf("door A's snapshot listed %d open questions; want %d", len(open), n)
	}

	answerStart := time.Now()
	for id, q := range questions {
		data, _ := json.Marshal(aep.Respond{Answer: aep.Answer{Values: map[string]any{"i": q.i}}})
		cmd := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Subject: id, Cause: id,
			Time: aep.FormatTime(time.Now()), Source: "aep://bench/agent/operator", Agent: "operator", Session: q.session,
			Capture: aep.CaptureMetadata, Data: data}
		raw, _ := json.Marshal(cmd)
		if owner[q.session] != door {
			res.crossDoors++
		}
		t0 := time.Now()
		if code, detail := door.Plane().Command(ctx, plane.TokenHolder(), &cmd, raw); code != "" {
			return res, fmt.Errorf("answering %s through door A: %s: %s", id, code, detail)
		}
		res.ack = append(res.ack, time.Since(t0))
		for done := false; !done; {
			select {
			case d := <-settled.C:
				done = d.Event.Subject == id
			case <-ctx.Done():
				return res, errors.New("door A did not show an answered question resolved before -wait ran out")
			}
		}
		res.resolved = append(res.resolved, time.Since(t0))
	}
	for range floods {
		select {
		case o := <-results:
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
		case <-ctx.Done():
			return res, errors.New("a flood's tools/call had no result before -wait ran out")
		}
	}
	res.answerAll = time.Since(answerStart)
	return res, nil
}

// printFleetTable prints the medians of the rounds, side by side.
func printFleetTable(w io.Writer, n, gateways, rounds int, res map[string][]fleetResult) {
	fmt.Fprintf(w, "%d questions open at once; the NATS plane runs %d gateways (front doors) on a 3-node JetStream cluster with replicas 3, all in this process, and the questions are spread across its gateways; an operator answers every question, one at a time, on door A. Medians of %d paired rounds.\n\n",
		n, gateways, rounds)
	fmt.Fprintf(w, "| measure | %s | %s (%d gateways) | NATS / in-memory |\n|---|---|---|---|\n", planeLocal, planeNATS, gateways)
	row := func(name string, f func(fleetResult) time.Duration) {
		l, m := medianFleet(res[planeLocal], f), medianFleet(res[planeNATS], f)
		ratio := "—"
		if l > 0 {
			ratio = fmt.Sprintf("%.1f×", float64(m)/float64(l))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, l.Round(time.Microsecond), m.Round(time.Microsecond), ratio)
	}
	row("tools/call → every question on door A", func(r fleetResult) time.Duration { return r.raised })
	row("open-set snapshot (`pending`) on door A", func(r fleetResult) time.Duration { return r.snapshot })
	row("answer → ack decision of the asking session, p50", func(r fleetResult) time.Duration { return pctOf(r.ack, 50) })
	row("answer → ack decision of the asking session, p99", func(r fleetResult) time.Duration { return pctOf(r.ack, 99) })
	row("answer → resolved on door A, p50", func(r fleetResult) time.Duration { return pctOf(r.resolved, 50) })
	row("answer → resolved on door A, p99", func(r fleetResult) time.Duration { return pctOf(r.resolved, 99) })
	row("first answer → every tools/call result", func(r fleetResult) time.Duration { return r.answerAll })
	for _, kind := range []string{planeLocal, planeNATS} {
		rs := res[kind]
		if len(rs) == 0 {
			continue
		}
		last := rs[len(rs)-1]
		fmt.Fprintf(w, "\n%s, last round: %d of %d answers checked correct by the servers; %d answered on a door other than the asker's.", kind, last.correct, n, last.crossDoors)
	}
	fmt.Fprintln(w)
}

// pctOf is the p-th percentile of d, which it leaves in its order.
func pctOf(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sortDurations(s)
	return percentile(s, p)
}

// medianFleet is the median over rounds of f.
func medianFleet(rs []fleetResult, f func(fleetResult) time.Duration) time.Duration {
	v := make([]time.Duration, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return median(v)
}

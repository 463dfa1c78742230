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

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsnode"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
)

// The deployments bench fleet compares.
const (
	planeLocal = "in-memory plane, 1 process"
	planeHub   = "single hub"
	planeNATS  = "NATS plane"
)

// fleetKinds are the deployments in the order of the table.
var fleetKinds = []string{planeLocal, planeHub, planeNATS}

// fleetResult is what one round measured on one plane.
type fleetResult struct {
	raised     time.Duration   // tools/call → the last question on door A
	snapshot   time.Duration   // `pending` on door A, every question in it
	ack        []time.Duration // answer sent → its ack on door A
	resolved   []time.Duration // answer sent → the question resolved on door A
	answerAll  time.Duration   // the first answer → every tools/call result
	correct    int
	crossDoors int // questions whose owner was not door A
}

// runFleet raises -n questions across the sessions of one process on the
// in-memory plane; across -gateways gateways joined by relay links to one
// hub, a bridge with no sessions of its own that serves the endpoint
// (today's fleet: --join); and across -gateways gateways on a 3-node NATS
// JetStream cluster, all in this process. It measures, on door A (the
// one process, the hub, the first NATS gateway): when every question is
// there, the open-set snapshot, and each answer, sent by an operator on
// door A's /socket, until its ack and until door A shows the question
// resolved. Rounds are paired: each runs every deployment, in rotating
// order; the table shows the medians of the rounds.
func runFleet(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	n := fs.Int("n", 1000, "questions open at once")
	perSession := fs.Int("per-session", 200, "questions each bridge session holds")
	gateways := fs.Int("gateways", 3, "gateways joined to the hub, and gateways (front doors) on the NATS plane")
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
		for k := range fleetKinds {
			kind := fleetKinds[(r+k)%len(fleetKinds)]
			rctx, cancel := context.WithTimeout(ctx, *wait)
			out, err := fleetRound(rctx, self, kind, *gateways, *n, *perSession)
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

// fleetRound runs one round of one deployment.
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
	// door is where the operator is; askers are the hosts that run the
	// sessions.
	var door *bridge.Host
	var askers []*bridge.Host
	switch kind {
	case planeLocal:
		h, err := listeningHost(nil)
		if err != nil {
			return res, err
		}
		hosts = append(hosts, h)
		door, askers = h, hosts
	case planeHub:
		hub, err := listeningHost(nil)
		if err != nil {
			return res, err
		}
		hosts = append(hosts, hub)
		door = hub
		for range gateways {
			// The hub's port is taken: the host joins it by a relay link.
			h, err := bridge.NewHost(bridge.HostOptions{Listen: hub.Addr(), Token: pendingToken})
			if err != nil {
				return res, err
			}
			if h.Joined() == "" {
				h.Close(ctx)
				return res, errors.New("a gateway did not join the hub")
			}
			hosts = append(hosts, h)
			askers = append(askers, h)
		}
	case planeNATS:
		for range gateways {
			h, err := listeningHost(nats)
			if err != nil {
				return res, err
			}
			hosts = append(hosts, h)
		}
		door, askers = hosts[0], hosts
	}
	asked := door.Hub().Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, n+16)
	defer asked.Close()
	var floods []*flood
	defer func() {
		for _, f := range floods {
			f.stop()
		}
	}()
	owner := map[string]*bridge.Host{}
	for i, left := 0, n; left > 0; i, left = i+1, left-perSession {
		h := askers[i%len(askers)]
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

	op := &operatorSocket{addr: door.Addr()}
	defer op.close()
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
		ack, resolved, err := op.answer(ctx, cmd.ID, id, raw)
		if err != nil {
			return res, fmt.Errorf("answering %s on door A: %w", id, err)
		}
		res.ack = append(res.ack, ack)
		res.resolved = append(res.resolved, resolved)
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
	fmt.Fprintf(w, "%d questions open at once, all in this process: the in-memory plane runs every session in one bridge process; the single hub runs them on %d gateways joined by relay links to a hub bridge that runs none (today's fleet); the NATS plane runs them on %d gateways (front doors) on a 3-node JetStream cluster with replicas 3. An operator on door A's /socket (the process, the hub, the first NATS gateway) answers every question, one at a time. Medians of %d paired rounds.\n\n",
		n, gateways, gateways, rounds)
	fmt.Fprintf(w, "| measure | %s | %s (%d gateways) | %s (%d gateways) | NATS / hub |\n|---|---|---|---|---|\n", planeLocal, planeHub, gateways, planeNATS, gateways)
	row := func(name string, f func(fleetResult) time.Duration) {
		l, h, m := medianFleet(res[planeLocal], f), medianFleet(res[planeHub], f), medianFleet(res[planeNATS], f)
		ratio := "—"
		if h > 0 {
			ratio = fmt.Sprintf("%.2f×", float64(m)/float64(h))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, l.Round(time.Microsecond), h.Round(time.Microsecond), m.Round(time.Microsecond), ratio)
	}
	row("tools/call → every question on door A", func(r fleetResult) time.Duration { return r.raised })
	row("open-set snapshot (`pending`) on door A", func(r fleetResult) time.Duration { return r.snapshot })
	row("answer → its ack on door A, p50", func(r fleetResult) time.Duration { return pctOf(r.ack, 50) })
	row("answer → its ack on door A, p99", func(r fleetResult) time.Duration { return pctOf(r.ack, 99) })
	row("answer → resolved on door A, p50", func(r fleetResult) time.Duration { return pctOf(r.resolved, 50) })
	row("answer → resolved on door A, p99", func(r fleetResult) time.Duration { return pctOf(r.resolved, 99) })
	row("first answer → every tools/call result", func(r fleetResult) time.Duration { return r.answerAll })
	for _, kind := range fleetKinds {
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

// listeningHost is a host serving the AEP endpoint on a loopback port of
// the system's choosing, on the NATS plane nats unless it is nil.
func listeningHost(nats *natsplane.Options) (*bridge.Host, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h, err := bridge.NewHost(bridge.HostOptions{Listener: ln, Token: pendingToken, NATS: nats})
	if err != nil {
		ln.Close()
		return nil, err
	}
	return h, nil
}

// answersPerSocket is how many answers one operator connection sends
// before the next takes over: fewer than the endpoint's burst of frames
// (512), so its flood control never refuses one however fast the answers
// go; the connection's setup is outside every measure.
const answersPerSocket = 200

// operatorSocket is an operator on door A's /socket, subscribed to the
// acks and the resolutions, as the inbox is.
type operatorSocket struct {
	addr string
	c    *websocket.Conn
	sent int
}

// connect opens a connection, says hello and subscribes.
func (o *operatorSocket) connect(ctx context.Context) error {
	o.close()
	c, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+o.addr+"/socket?access_token="+pendingToken, nil)
	if err != nil {
		return err
	}
	o.c, o.sent = c, 0
	for _, f := range []string{`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"bench-operator"}}`,
		`{"type":"subscribe","id":"acks","filter":{"type":["control.accepted","control.rejected","attention.resolved"]}}`} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			return err
		}
	}
	for _, want := range []string{"hello", "subscribed"} {
		f, err := o.read(ctx)
		if err != nil {
			return err
		}
		if f.Type != want {
			return fmt.Errorf("door A answered %q to the operator's %s", f.Type, want)
		}
	}
	return nil
}

// socketFrame is what the operator reads of a frame or an event.
type socketFrame struct {
	Type    string `json:"type"`
	Cause   string `json:"cause"`
	Subject string `json:"subject"`
	Code    string `json:"code"`
	Detail  string `json:"detail"`
}

func (o *operatorSocket) read(ctx context.Context) (socketFrame, error) {
	var f socketFrame
	if d, ok := ctx.Deadline(); ok {
		o.c.SetReadDeadline(d)
	}
	_, b, err := o.c.ReadMessage()
	if err != nil {
		return f, err
	}
	return f, json.Unmarshal(b, &f)
}

// answer sends the command raw, whose id is cmdID, answering question,
// and returns how long until its ack came back and until the question
// was resolved.
func (o *operatorSocket) answer(ctx context.Context, cmdID, question string, raw []byte) (ack, resolved time.Duration, err error) {
	if o.c == nil || o.sent == answersPerSocket {
		if err := o.connect(ctx); err != nil {
			return 0, 0, fmt.Errorf("connecting to door A's /socket: %w", err)
		}
	}
	o.sent++
	t0 := time.Now()
	if err := o.c.WriteMessage(websocket.TextMessage, raw); err != nil {
		return 0, 0, err
	}
	for ack == 0 || resolved == 0 {
		f, err := o.read(ctx)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case f.Type == "error" && f.Cause == cmdID:
			return 0, 0, fmt.Errorf("refused: %s: %s", f.Code, f.Detail)
		case f.Type == "control.rejected" && f.Cause == cmdID:
			return 0, 0, errors.New("the asking session rejected the answer")
		case f.Type == "control.accepted" && f.Cause == cmdID:
			ack = time.Since(t0)
		case f.Type == "attention.resolved" && f.Subject == question:
			resolved = time.Since(t0)
		}
	}
	return ack, resolved, nil
}

func (o *operatorSocket) close() {
	if o.c != nil {
		o.c.Close()
		o.c = nil
	}
}

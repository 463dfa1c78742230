package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
)

// ingestToken is long enough for any bridge's token rules.
const ingestToken = "bench-ingest-token-0123456789abcdefghijklmnop"

// ingestRun is what one bridge measured.
type ingestRun struct {
	name                                       string
	rssStart, rssIngested, rssSubscribed, peak int64 // kB
	accepted, refused                          int
	ingestTime, drainTime                      time.Duration
	heldEvents                                 int
	heldBytes, delivered                       int64
}

// runIngest reproduces the ingest abuse against a real bridge process: n
// events of about size bytes POSTed one by one into a few sessions, then
// subs from:"all" WebSocket subscriptions that read their whole backlog.
// The bridge's RSS is read from /proc before, after the ingest and with
// the subscribers. With -baseline REV the same load runs first against
// the bridge built from that git revision, for a side-by-side table.
func runIngest(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	n := fs.Int("n", 400, "events ingested")
	size := fs.Int("size", endpoint.DefaultMaxEvent-2048, "bytes per event (the default is just under the 1 MiB cap)")
	sessions := fs.Int("sessions", 8, "sessions the events are spread over")
	subs := fs.Int("subs", 64, `from:"all" WebSocket subscriptions`)
	baseline := fs.String("baseline", "", "also measure the bridge built from this git revision (e.g. main), first")
	questions := fs.Bool("questions", false, "ingest open questions (attention.requested) instead of progress events")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	revs := []string{""}
	if *baseline != "" {
		revs = []string{*baseline, ""}
	}
	var runs []ingestRun
	for _, rev := range revs {
		bin, cleanup, err := buildBridge(rev)
		if err != nil {
			return err
		}
		r, err := ingestOnce(ctx, bin, self, load{*n, *size, *sessions, *subs, *questions})
		cleanup()
		if err != nil {
			return err
		}
		r.name = "this tree"
		if rev != "" {
			r.name = "built from " + rev
		}
		runs = append(runs, r)
	}
	printIngest(runs, load{*n, *size, *sessions, *subs, *questions})
	return nil
}

// buildBridge builds the bridge from this tree, or from a git revision
// exported with git archive, into a temporary folder.
func buildBridge(rev string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "aep-bench-ingest")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	src := "."
	if rev != "" {
		src = filepath.Join(dir, "src")
		if err := os.Mkdir(src, 0o700); err != nil {
			cleanup()
			return "", nil, err
		}
		if err := exportRevision(rev, src); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	bin := filepath.Join(dir, "aep-mcp-bridge")
	build := exec.Command("go", "build", "-o", bin, "./cmd/aep-mcp-bridge")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building the bridge from %s: %v\n%s", src, err, out)
	}
	return bin, cleanup, nil
}

// exportRevision writes the files of a git revision into dst.
func exportRevision(rev, dst string) error {
	archive := exec.Command("git", "archive", "--format=tar", rev)
	extract := exec.Command("tar", "-x", "-C", dst)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	extract.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr = &stderr
	if err := extract.Start(); err != nil {
		return fmt.Errorf("running tar: %w", err)
	}
	aerr := archive.Run()
	xerr := extract.Wait()
	if aerr != nil || xerr != nil {
		return fmt.Errorf("exporting revision %s (run from the repository; is it a revision?): %v %v %s", rev, aerr, xerr, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// bridgeProc is a bridge process serving its endpoint, in front of this
// program's idle MCP server, with its client's stdin held open.
type bridgeProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	state string
}

func startBridge(ctx context.Context, bin, self string) (*bridgeProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	state, err := os.MkdirTemp("", "aep-bench-state")
	if err != nil {
		return nil, err
	}
	p := &bridgeProc{addr: addr, state: state}
	p.cmd = exec.Command(bin, "--listen", addr, "--token", ingestToken, "--log-dir", "off", "--state-dir", state, "--", self, "flood-server")
	p.stdin, _ = p.cmd.StdinPipe()
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(state)
		return nil, err
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return p, nil
		}
	}
	p.stop()
	return nil, fmt.Errorf("the bridge did not serve %s within 20s", addr)
}

func (p *bridgeProc) stop() {
	p.stdin.Close() // the client leaves; the bridge ends
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(p.state)
}

// rss returns a process's resident and peak resident set sizes in kB.
func rss(pid int) (cur, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			fmt.Sscan(strings.TrimPrefix(line, "VmRSS:"), &v)
			cur = v
		case strings.HasPrefix(line, "VmHWM:"):
			fmt.Sscan(strings.TrimPrefix(line, "VmHWM:"), &v)
			peak = v
		}
	}
	return cur, peak
}

// load is what runIngest sends.
type load struct {
	n, size, sessions, subs int
	questions               bool
}

func ingestOnce(ctx context.Context, bin, self string, l load) (ingestRun, error) {
	p, err := startBridge(ctx, bin, self)
	if err != nil {
		return ingestRun{}, err
	}
	defer p.stop()
	pid := p.cmd.Process.Pid
	var r ingestRun
	r.rssStart, _ = rss(pid)
	start := time.Now()
	if err := ingestBig(ctx, p.addr, l, &r); err != nil {
		return r, err
	}
	r.ingestTime = time.Since(start)
	r.rssIngested, _ = rss(pid)
	if r.heldEvents, r.heldBytes, err = replayHeld(ctx, p.addr); err != nil {
		return r, err
	}
	release := make(chan struct{})
	start = time.Now()
	delivered, wait, err := subscribeAll(ctx, p.addr, l.subs, r.heldEvents, release)
	r.drainTime = time.Since(start)
	r.delivered = delivered
	r.rssSubscribed, r.peak = rss(pid)
	close(release)
	wait()
	return r, err
}

// ingestBig POSTs l.n events of about l.size bytes, one per request,
// round robin over l.sessions: progress events, or open questions.
func ingestBig(ctx context.Context, addr string, l load, r *ingestRun) error {
	filler := strings.Repeat("x", max(l.size-400, 1))
	typ, data := "progress.status", `{"message":"%s"}`
	if l.questions {
		typ, data = "attention.requested", `{"kind":"input","prompt":"%s"}`
	}
	for i := range l.n {
		s := i % l.sessions
		ev := fmt.Sprintf(`{"aep":"0.1","id":"%s","type":"%s","time":"%s","source":"aep://abuse/agent/a/session/s%d","agent":"a","session":"s%d","seq":%d,"capture":"redacted","data":`+data+`}`,
			aep.NewID(), typ, aep.FormatTime(time.Now()), s, s, i/l.sessions, filler)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/events", strings.NewReader(ev))
		req.Header.Set("Authorization", "Bearer "+ingestToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("AEP-Version", aep.Version)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("ingesting event %d: %w", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusAccepted {
			r.accepted++
		} else {
			r.refused++
		}
	}
	return nil
}

// replayHeld reads what the bridge replays to from=all (SSE, live=0): the
// events and bytes it holds.
func replayHeld(ctx context.Context, addr string) (int, int64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/stream?live=0&from=all", nil)
	req.Header.Set("Authorization", "Bearer "+ingestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	events, bytes, lineStart := 0, int64(0), true
	for {
		chunk, err := br.ReadSlice('\n')
		if lineStart && len(chunk) >= 6 && string(chunk[:6]) == "data: " {
			events++
		}
		bytes += int64(len(chunk))
		lineStart = err == nil
		switch {
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return events, bytes, nil
		default:
			return events, bytes, err
		}
	}
}

// subscribeAll opens subs from:"all" subscriptions, each on its own
// connection, and returns once every one has read the events held, with
// the bytes they read; the connections stay open until release closes,
// and wait returns when they are closed.
func subscribeAll(ctx context.Context, addr string, subs, held int, release <-chan struct{}) (int64, func(), error) {
	var (
		wg, drained sync.WaitGroup
		mu          sync.Mutex
		total       int64
		firstErr    error
	)
	for range subs {
		wg.Add(1)
		drained.Add(1)
		go func() {
			defer wg.Done()
			drainSubscription(ctx, addr, held, release, func(n int64, err error) {
				mu.Lock()
				total += n
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				drained.Done()
			})
		}()
	}
	drained.Wait()
	mu.Lock()
	defer mu.Unlock()
	return total, wg.Wait, firstErr
}

// drainSubscription subscribes from:"all", reads held events (frames are
// told from events by the dot in their type), reports the bytes it read
// (or why it could not), and holds the connection until release closes.
func drainSubscription(ctx context.Context, addr string, held int, release <-chan struct{}, drained func(int64, error)) {
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+addr+"/socket", http.Header{"Authorization": {"Bearer " + ingestToken}})
	if err != nil {
		drained(0, err)
		return
	}
	defer conn.Close()
	conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(aep.NewHello(aep.RoleConsumer, aep.Identity{Agent: "bench"}, nil)))
	conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(aep.Subscribe{Type: aep.FrameSubscribe, ID: "all", From: aep.FromAll}))
	var read int64
	head := make([]byte, 64)
	for got := 0; got < held; {
		_, r, err := conn.NextReader()
		if err != nil {
			drained(read, fmt.Errorf("reading the backlog after %d of %d events: %w", got, held, err))
			return
		}
		k, _ := io.ReadFull(r, head)
		rest, _ := io.Copy(io.Discard, r)
		if bytes.Contains(head[:k], []byte(`"aep":`)) {
			got++
			read += int64(k) + rest
		}
	}
	drained(read, nil)
	<-release
}

func printIngest(runs []ingestRun, l load) {
	what := "events"
	if l.questions {
		what = "open questions"
	}
	fmt.Printf("%d %s of %.2f MiB POSTed one by one into %d sessions of a running bridge, then %d from:\"all\" WebSocket subscriptions each reading everything held; RSS of the bridge process\n\n",
		l.n, what, float64(l.size)/(1<<20), l.sessions, l.subs)
	head, rule := "| measure |", "|---|"
	for _, r := range runs {
		head += " " + r.name + " |"
		rule += "---|"
	}
	fmt.Println(head)
	fmt.Println(rule)
	row := func(name string, f func(r ingestRun) string) {
		line := "| " + name + " |"
		for _, r := range runs {
			line += " " + f(r) + " |"
		}
		fmt.Println(line)
	}
	mb := func(kb int64) string { return fmt.Sprintf("%.0f MB", float64(kb)/1000) }
	row("RSS at start", func(r ingestRun) string { return mb(r.rssStart) })
	row("events accepted / refused", func(r ingestRun) string { return fmt.Sprintf("%d / %d", r.accepted, r.refused) })
	row("ingest time", func(r ingestRun) string { return r.ingestTime.Round(time.Millisecond).String() })
	row("RSS after the ingest", func(r ingestRun) string { return mb(r.rssIngested) })
	row(`held (what an SSE from=all reads)`, func(r ingestRun) string {
		return fmt.Sprintf("%d events, %.0f MiB", r.heldEvents, float64(r.heldBytes)/(1<<20))
	})
	row(fmt.Sprintf("read by the %d subscribers", l.subs), func(r ingestRun) string {
		return fmt.Sprintf("%.0f MiB in %s", float64(r.delivered)/(1<<20), r.drainTime.Round(time.Millisecond))
	})
	row("RSS with the subscribers connected", func(r ingestRun) string { return mb(r.rssSubscribed) })
	row("peak RSS (VmHWM)", func(r ingestRun) string { return mb(r.peak) })
}

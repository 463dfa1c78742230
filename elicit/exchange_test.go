package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// Scripted exchanges, in the style of the go-sdk conformance tests: each
// file under testdata/exchanges is one whole client ↔ bridge ↔ server
// session. Its "exchange" section interleaves what the peers and the
// operator do (input lines) with what the bridge made of it (expected
// lines); see testdata/exchanges/README for the grammar.
//
// Run with -update to rewrite the expected lines from what the proxy
// produced. A rewritten file is a claim about behaviour: read its diff
// before committing it. A normal run never accepts a difference.
var update = flag.Bool("update", false, "rewrite the expected lines of testdata/exchanges/*.txtar from what the proxy produced (review the diff before committing)")

func TestExchanges(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "exchanges", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripted exchanges in testdata/exchanges")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runExchangeFile(t, file)
		})
	}
}

func runExchangeFile(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var opts, script *txtar.File
	for i := range ar.Files {
		switch ar.Files[i].Name {
		case "options":
			opts = &ar.Files[i]
		case "exchange":
			script = &ar.Files[i]
		default:
			t.Fatalf("%s: unknown section %q; want options and exchange", file, ar.Files[i].Name)
		}
	}
	if script == nil {
		t.Fatalf("%s: no exchange section", file)
	}
	cfg, err := parseExchangeOptions(opts)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	steps, err := parseExchange(string(script.Data))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var got []string
	synctest.Test(t, func(t *testing.T) {
		got = playExchange(t, cfg, steps)
	})
	want := strings.Split(strings.TrimSuffix(string(script.Data), "\n"), "\n")
	if *update {
		script.Data = []byte(strings.Join(got, "\n") + "\n")
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Logf("rewrote %s; review this change before committing it (-old +new):\n%s", file, diff)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the proxy's exchange differs from the script (-script +proxy); if the change is intended, run go test -run TestExchanges -update and review the file:\n%s", file, diff)
	}
}

// exchangeConfig is an exchange's options section.
type exchangeConfig struct {
	route     Route
	keepalive time.Duration
	timeout   time.Duration
	name      string
}

func parseExchangeOptions(f *txtar.File) (exchangeConfig, error) {
	var c exchangeConfig
	if f == nil {
		return c, nil
	}
	for _, line := range strings.Split(string(f.Data), "\n") {
		key, val, _ := strings.Cut(strings.TrimSpace(line), " ")
		var err error
		switch key {
		case "":
		case "route":
			c.route, err = ParseRoute(val)
		case "keepalive":
			c.keepalive, err = time.ParseDuration(val)
		case "timeout":
			c.timeout, err = time.ParseDuration(val)
		case "name":
			c.name = val
		default:
			err = fmt.Errorf("unknown option %q; want route, keepalive, timeout or name", key)
		}
		if err != nil {
			return c, fmt.Errorf("options: %w", err)
		}
	}
	return c, nil
}

// step is one input line of an exchange with the lines before it that
// are kept as they are (comments and blank lines).
type step struct {
	keep  []string
	input string
}

// Expected lines: what the bridge wrote to each peer, the events it
// published, the acks the operator got, and how the session ended.
var expectedPrefixes = []string{"client< ", "server< ", "event ", "operator< ", "ended ", "session "}

// parseExchange splits an exchange into its input steps; expected lines
// are dropped, since playing the exchange produces them again.
func parseExchange(s string) ([]step, error) {
	var steps []step
	var keep []string
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			keep = append(keep, line)
		case hasAnyPrefix(line, expectedPrefixes):
		case hasAnyPrefix(line, []string{"client> ", "server> ", "server@", "operator> ", "wait "}):
			steps = append(steps, step{keep: keep, input: line})
			keep = nil
		default:
			return nil, fmt.Errorf("exchange line %d: %q is neither an input (client>, server>, server@ID>, operator>, wait) nor an expected line (client<, server<, event, operator<, ended, session)", i+1, line)
		}
	}
	if len(steps) == 0 {
		return nil, errors.New("the exchange has no input lines")
	}
	if last := steps[len(steps)-1].input; last != "client> close" && last != "server> close" {
		return nil, fmt.Errorf("the exchange must end with client> close or server> close, not %q", last)
	}
	if len(keep) > 0 {
		steps = append(steps, step{keep: keep})
	}
	return steps, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// exchange is a running scripted session: the real proxy and the real
// attention manager, with in-memory peers and an in-memory publisher that
// record everything in one ordered transcript.
type exchange struct {
	t        *testing.T
	rec      *recorder
	client   *memConn
	server   *memConn
	mgr      *attention.Manager
	px       *Proxy
	ended    chan Ending
	closed   bool
	commands int
}

// playExchange runs steps inside a synctest bubble and returns the
// exchange section as the proxy played it.
func playExchange(t *testing.T, cfg exchangeConfig, steps []step) []string {
	rec := &recorder{}
	x := &exchange{t: t, rec: rec, ended: make(chan Ending, 1)}
	// The server's side says on which client request's response stream
	// each message came (server@ID> lines), as the streamable HTTP
	// transport does: the proxy reads it through Conn.Read, the
	// production read path.
	x.client, x.server = newMemConn(), newMemConn()
	x.server.rel = make(chan json.RawMessage, 16)
	x.client.record = func(b []byte) { rec.wrote("client", b) }
	x.server.record = func(b []byte) { rec.wrote("server", b) }
	x.mgr = attention.NewManager(attention.ManagerOptions{Agent: "aep-mcp-bridge", Publisher: rec, Timeout: cfg.timeout})
	x.px = New(Options{Client: x.client, Server: x.server, Manager: x.mgr, Publisher: rec, Route: cfg.route,
		Keepalive: cfg.keepalive, Name: cfg.name, OnSession: func(ci ClientInfo) {
			rec.add(fmt.Sprintf("session client=%q version=%q protocol=%q", ci.Name, ci.Version, ci.ProtocolVersion))
		}})
	retries := 0
	x.px.newID = func() string { retries++; return fmt.Sprintf("r%d", retries) }
	go func() { x.ended <- x.px.Run(t.Context()) }()
	var out []string
	for _, s := range steps {
		out = append(out, s.keep...)
		if s.input == "" {
			continue
		}
		out = append(out, s.input)
		sent := x.play(s.input)
		synctest.Wait()
		out = append(out, rec.take(sent)...)
		if x.closed {
			out = append(out, x.shutdown()...)
		}
	}
	return out
}

// play performs one input line and returns the message it sent, if any.
func (x *exchange) play(line string) []byte {
	t := x.t
	verb, arg, _ := strings.Cut(line, " ")
	var related json.RawMessage
	if id, ok := strings.CutPrefix(verb, "server@"); ok {
		// server@ID>: the message came on the response stream of the
		// client's request ID (streamable HTTP).
		related, verb = json.RawMessage(strings.TrimSuffix(id, ">")), "server>"
	}
	switch verb {
	case "client>", "server>":
		c, side := x.client, "client"
		if verb == "server>" {
			c, side = x.server, "server"
			x.server.rel <- related
		}
		if x.closed {
			t.Fatalf("%q: the session has already ended", line)
		}
		if arg == "close" {
			c.Close() // the end of the peer's stream
			x.closed = true
			return nil
		}
		msg := []byte(arg)
		select {
		case c.in <- msg:
		default:
			t.Fatalf("%q: the %s's queue is full; the proxy stopped reading it", line, side)
		}
		return msg
	case "operator>":
		x.respond(line, arg)
	case "wait":
		d, err := time.ParseDuration(arg)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		time.Sleep(d) // the bubble's fake clock: timers and tickers fire in order
	}
	return nil
}

// respond plays "operator> respond <question id> <answer>": an operator's
// control.attention.respond, decoded as the control intake decodes it.
func (x *exchange) respond(line, arg string) {
	t := x.t
	cmd, rest, _ := strings.Cut(arg, " ")
	id, answer, _ := strings.Cut(rest, " ")
	if cmd != "respond" || id == "" {
		t.Fatalf("%q: want operator> respond <question id> <answer JSON>", line)
	}
	var a aep.Answer
	dec := json.NewDecoder(strings.NewReader(answer))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("%q: the answer is not an answer object: %v", line, err)
	}
	x.commands++
	ev := aep.Event{ID: fmt.Sprintf("cmd%d", x.commands), Type: "control.attention.respond", Subject: id, Agent: "operator"}
	x.mgr.Respond(ev, a, ev.Agent, func(reason, detail string) error {
		if reason == "" {
			x.rec.add("operator< accepted")
		} else {
			x.rec.add("operator< rejected " + reason + ": " + detail)
		}
		return nil
	})
}

// shutdown ends the session in the bridge's order: Run has returned;
// pending questions are dismissed; when the server went away, the
// client's in-flight requests get an error; then the streams close.
func (x *exchange) shutdown() []string {
	var e Ending
	select {
	case e = <-x.ended:
	default:
		x.t.Fatal("the proxy's Run did not return after a peer closed")
	}
	x.rec.add(fmt.Sprintf("ended client_closed=%t err=%v", e.ClientClosed, e.Err))
	x.mgr.Close()
	if !e.ClientClosed {
		x.px.FailInflight("upstream MCP server exited (exit status 1); run the command alone to see its error")
	}
	if err := x.px.Close(); err != nil {
		x.t.Errorf("closing the proxy: %v", err)
	}
	synctest.Wait()
	return x.rec.take(nil)
}

// recorder is the transcript of one exchange and its in-memory publisher:
// events get ids ev1, ev2, … in the order they are published.
type recorder struct {
	mu     sync.Mutex
	lines  []recorded
	events int
}

type recorded struct {
	line string
	msg  []byte // a message written to a peer
}

func (r *recorder) add(line string) {
	r.mu.Lock()
	r.lines = append(r.lines, recorded{line: line})
	r.mu.Unlock()
}

func (r *recorder) wrote(side string, msg []byte) {
	r.mu.Lock()
	r.lines = append(r.lines, recorded{line: side + "< ", msg: bytes.Clone(msg)})
	r.mu.Unlock()
}

// Emit implements attention.Publisher and Publisher.
func (r *recorder) Emit(d aep.Draft) (aep.Event, []byte, error) {
	data, err := json.Marshal(d.Data)
	if err != nil {
		return aep.Event{}, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	id := fmt.Sprintf("ev%d", r.events)
	line := "event " + id + " " + d.Type + " subject=" + d.Subject
	if d.Cause != "" {
		line += " cause=" + d.Cause
	}
	r.lines = append(r.lines, recorded{line: line + " " + string(data)})
	return aep.Event{ID: id, Type: d.Type, Subject: d.Subject}, data, nil
}

// take returns the lines recorded since the last take. A message that is
// byte for byte the one the step sent shows as "(unchanged)", so the
// transcript shows which messages the bridge relayed untouched.
func (r *recorder) take(sent []byte) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lines))
	for _, l := range r.lines {
		switch {
		case l.msg == nil:
			out = append(out, l.line)
		case sent != nil && bytes.Equal(l.msg, sent):
			out = append(out, l.line+"(unchanged)")
		default:
			out = append(out, l.line+string(l.msg))
		}
	}
	r.lines = nil
	return out
}

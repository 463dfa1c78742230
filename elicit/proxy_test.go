package elicit

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// memConn is an in-memory Conn: the test feeds in, the proxy writes out,
// to out or, when record is set, to record. When rel is set, each message
// read takes its Frame.Related from it.
type memConn struct {
	record func([]byte)
	in     chan []byte
	rel    chan json.RawMessage
	mu     sync.Mutex
	out    [][]byte
	wrote  chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newMemConn() *memConn {
	return &memConn{in: make(chan []byte, 16), wrote: make(chan struct{}, 64), closed: make(chan struct{})}
}

// Read returns the next message fed in; like a real Conn it stops
// waiting when ctx ends.
func (c *memConn) Read(ctx context.Context) (Frame, error) {
	select {
	case b := <-c.in:
		f := Frame{Head: b}
		if c.rel != nil {
			f.Related = <-c.rel
		}
		return f, nil
	case <-c.closed:
		return Frame{}, io.EOF
	case <-ctx.Done():
		return Frame{}, ctx.Err()
	}
}

// Write records a message whole; a frame with no bytes (a flush) is
// nothing to record.
func (c *memConn) Write(ctx context.Context, f Frame) error {
	b := f.Head
	if f.Rest != nil {
		rest, err := io.ReadAll(f.Rest)
		if err != nil {
			return err
		}
		b = append(append([]byte(nil), b...), rest...)
	}
	if len(b) == 0 {
		return nil
	}
	return c.writeMessage(b)
}

func (c *memConn) writeMessage(b []byte) error {
	if c.record != nil {
		c.record(b)
		return nil
	}
	c.mu.Lock()
	c.out = append(c.out, append([]byte(nil), b...))
	c.mu.Unlock()
	select {
	case c.wrote <- struct{}{}:
	default: // fuzz inputs may write more than a test reads
	}
	return nil
}

func (c *memConn) Close() error { c.once.Do(func() { close(c.closed) }); return nil }

// next waits for the proxy's next write.
func (c *memConn) next(t *testing.T) string {
	t.Helper()
	select {
	case <-c.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("no message written")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.out[0]
	c.out = c.out[1:]
	return string(b)
}

// nopPublisher stamps events with an id and reports each type it sees.
type nopPublisher struct{ seen chan string }

func (p nopPublisher) Emit(d aep.Draft) (aep.Event, []byte, error) {
	if p.seen != nil {
		p.seen <- d.Type
	}
	return aep.Event{ID: aep.NewID(), Type: d.Type}, []byte("{}"), nil
}

func startProxy(t *testing.T, route Route) (*Proxy, *memConn, *memConn) {
	t.Helper()
	p, cl, sv, _, _ := startProxyEvents(t, route)
	return p, cl, sv
}

func startProxyEvents(t *testing.T, route Route) (*Proxy, *memConn, *memConn, *attention.Manager, <-chan string) {
	t.Helper()
	cl, sv := newMemConn(), newMemConn()
	seen := make(chan string, 64)
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{seen: seen}})
	p := New(Options{Client: cl, Server: sv, Manager: mgr, Route: route})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		p.Close()
		mgr.Close()
	})
	return p, cl, sv, mgr, seen
}

func TestPassThroughIsByteExact(t *testing.T) {
	_, cl, sv := startProxy(t, RouteBoth)
	msgs := []string{
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"x","arguments":{"z":1,"a":[1,2,{"b":null}]}}}`,
		`{"id":7,"jsonrpc":"2.0","method":"resources/subscribe","params":{"uri":"file:///x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}]`,
		`{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"taskId":"t"},"extra":"unknown members survive"}`,
	}
	for _, m := range msgs {
		cl.in <- []byte(m)
		if got := sv.next(t); got != m {
			t.Errorf("client→server changed the message:\n got %s\nwant %s", got, m)
		}
	}
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"<b>&amp;</b>"}]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"messages":[]}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
	} {
		sv.in <- []byte(m)
		if got := cl.next(t); got != m {
			t.Errorf("server→client changed the message:\n got %s\nwant %s", got, m)
		}
	}
}

func TestMalformedInputIsAnsweredNotForwarded(t *testing.T) {
	_, cl, sv := startProxy(t, RouteBoth)
	tests := []struct{ in, wantCode string }{
		{`{"jsonrpc":"2.0","id":1,"method":`, `-32700`},
		{`not json at all`, `-32700`},
		{`42`, `-32600`},
		{`[]`, `-32600`},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, `-32600`},
	}
	for _, tt := range tests {
		cl.in <- []byte(tt.in)
		if got := cl.next(t); !strings.Contains(got, tt.wantCode) {
			t.Errorf("%q: answered %s; want code %s", tt.in, got, tt.wantCode)
		}
	}
	// The stream is intact afterwards.
	ok := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	cl.in <- []byte(ok)
	if got := sv.next(t); got != ok {
		t.Fatalf("after bad input: got %s", got)
	}
	sv.in <- []byte(`{"jsonrpc":`)
	if got := sv.next(t); !strings.Contains(got, "-32700") {
		t.Errorf("server garbage: answered %s", got)
	}
}

func TestInitializeDeclaresElicitation(t *testing.T) {
	tests := []struct {
		name       string
		route      Route
		version    string
		caps       string
		wantCaps   string
		clientForm bool
	}{
		{"adds form on 2025-11-25", RouteBoth, "2025-11-25", `{"roots":{}}`, `{"elicitation":{"form":{},"url":{}},"roots":{}}`, false},
		{"adds {} on 2025-06-18", RouteBoth, "2025-06-18", `{}`, `{"elicitation":{}}`, false},
		{"keeps the client's url mode", RouteRemote, "2025-11-25", `{"elicitation":{"url":{}}}`, `{"elicitation":{"form":{},"url":{}}}`, false},
		{"client already declares form", RouteBoth, "2025-11-25", `{"elicitation":{}}`, `{"elicitation":{"form":{},"url":{}}}`, true},
		{"route client passes unchanged", RouteClient, "2025-11-25", `{"sampling":{}}`, `{"sampling":{}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, cl, sv := startProxy(t, tt.route)
			cl.in <- []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + tt.version + `","capabilities":` + tt.caps + `,"clientInfo":{"name":"c","version":"1"}}}`)
			var m struct {
				Params struct {
					Capabilities json.RawMessage `json:"capabilities"`
				} `json:"params"`
			}
			if err := json.Unmarshal([]byte(sv.next(t)), &m); err != nil {
				t.Fatal(err)
			}
			if got := compactJSON(m.Params.Capabilities); got != tt.wantCaps {
				t.Errorf("capabilities: got %s; want %s", got, tt.wantCaps)
			}
			p.mu.Lock()
			form := p.clientForm
			p.mu.Unlock()
			if form != tt.clientForm {
				t.Errorf("client form: got %v; want %v", form, tt.clientForm)
			}
		})
	}
}

func compactJSON(b []byte) string {
	var v any
	json.Unmarshal(b, &v)
	out, _ := json.Marshal(v)
	return string(out)
}

func TestElicitationIsInterceptedAndAnswered(t *testing.T) {
	_, cl, sv, mgr, seen := startProxyEvents(t, RouteRemote)
	cl.in <- []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	sv.next(t)
	sv.in <- []byte(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"n?","requestedSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"]}}}`)
	select {
	case typ := <-seen:
		if typ != "attention.requested" {
			t.Fatalf("first event %s; want attention.requested", typ)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("question not raised")
	}
	pending := mgr.Pending()
	if len(pending) != 1 {
		t.Fatalf("%d pending; want 1", len(pending))
	}
	select {
	case <-cl.wrote:
		t.Fatal("route remote forwarded the question to the client")
	default:
	}
	var ackReason string
	mgr.Respond(aep.Event{ID: "c1", Subject: pending[0].ID, Agent: "op"}, aep.Answer{Values: map[string]any{"n": json.Number("4")}},
		"op", func(reason, detail string) error { ackReason = reason; return nil })
	if ackReason != "" {
		t.Fatalf("nacked: %s", ackReason)
	}
	if got, want := sv.next(t), `{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{"n":4}}}`; got != want {
		t.Fatalf("server got %s; want %s", got, want)
	}
}

// TestRequestsAfterTheServerLeftAreAnswered: once the server is gone and
// Run returned, a client request that arrives before the bridge closes is
// answered with the error FailInflight gives, never tracked and left
// waiting.
func TestRequestsAfterTheServerLeftAreAnswered(t *testing.T) {
	cl, sv := newMemConn(), newMemConn()
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
	defer mgr.Close()
	p := New(Options{Client: cl, Server: sv, Manager: mgr})
	defer p.Close()
	ended := make(chan Ending, 1)
	go func() { ended <- p.Run(context.Background()) }()
	sv.Close() // the server leaves
	if e := <-ended; e.ClientClosed {
		t.Fatalf("Run ended with %+v; want the server's end", e)
	}
	p.FailInflight("upstream MCP server exited (status 1)")
	cl.in <- []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
	cl.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	cl.in <- []byte(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	for _, id := range []string{"7", "8"} {
		want := `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"upstream MCP server exited (status 1)"}}`
		if got := cl.next(t); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
	if n := p.Inflight(); n != 0 {
		t.Fatalf("%d requests tracked after the end; want 0", n)
	}
}

// stuckConn is a server that stops reading: every write blocks until the
// test ends.
type stuckConn struct {
	*memConn
	release chan struct{}
}

func (c *stuckConn) Write(context.Context, Frame) error {
	<-c.release
	return io.ErrClosedPipe
}

// fromClient relays one whole message from the client, as the client's
// reader does with a message it read.
func (p *Proxy) fromClient(b []byte) { p.relay(p.ctx, Frame{Head: b}, true) }

// fromServer relays one whole message from the server.
func (p *Proxy) fromServer(b []byte) { p.relay(p.ctx, Frame{Head: b}, false) }

// TestAnOperatorNeverWaitsOnAServerThatStoppedReading: an answer is
// decided and acked on the operator's goroutine; what goes to the server
// is written on the proxy's own, so a server that stopped reading its
// input cannot freeze the operator's connection.
func TestAnOperatorNeverWaitsOnAServerThatStoppedReading(t *testing.T) {
	cl := newMemConn()
	sv := &stuckConn{memConn: newMemConn(), release: make(chan struct{})}
	seen := make(chan string, 64)
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{seen: seen}})
	p := New(Options{Client: cl, Server: sv, Manager: mgr, Route: RouteRemote})
	go p.Run(context.Background())
	defer func() { close(sv.release); p.Close(); mgr.Close() }()
	sv.in <- []byte(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`)
	if typ := <-seen; typ != "attention.requested" {
		t.Fatalf("first event %s; want attention.requested", typ)
	}
	answered := make(chan string, 1)
	go func() {
		var reason string
		mgr.Respond(aep.Event{ID: "c1", Subject: mgr.Pending()[0].ID, Agent: "op"}, aep.Answer{Values: map[string]any{"ok": true}},
			"op", func(r, _ string) error { reason = r; return nil })
		answered <- reason
	}()
	select {
	case reason := <-answered:
		if reason != "" {
			t.Fatalf("nacked: %s", reason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the operator's answer waited on a server that stopped reading")
	}
}

package bridge

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestOverlapBusy: the client's stream is told to share Go's poller
// while more than one request is outstanding, and for overlapWaits waits
// after, then to wait on its own thread again.
func TestOverlapBusy(t *testing.T) {
	n := 0
	o := &overlap{inflight: func() int { return n }, since: overlapWaits}
	for _, k := range []int{0, 1, 0, 1} {
		n = k
		if o.busy() {
			t.Fatalf("with %d request(s) outstanding and no overlap before, busy; want not", k)
		}
	}
	n = 2
	if !o.busy() {
		t.Fatal("with 2 requests outstanding, not busy; want busy")
	}
	n = 1
	for i := range overlapWaits {
		if !o.busy() {
			t.Fatalf("wait %d after an overlap, not busy; want busy for %d waits", i+1, overlapWaits)
		}
	}
	if o.busy() {
		t.Fatalf("wait %d after an overlap, busy; want not", overlapWaits+1)
	}
	n = 3
	if !o.busy() {
		t.Fatal("with 3 requests outstanding again, not busy; want busy")
	}
}

// sharingReader is a client stream that can share Go's poller: it hands
// the bridge's busy function to the test.
type sharingReader struct {
	*io.PipeReader
	busy chan func() bool
}

func (s sharingReader) ShareWaits(busy func() bool) { s.busy <- busy }

// TestClientStreamToldOfOverlap: a client stream that can share Go's
// poller gets, from the running session, a busy function that follows
// the client's requests awaiting the server: not busy while none are, busy
// while two questions hold two calls.
func TestClientStreamToldOfOverlap(t *testing.T) {
	t.Parallel()
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	in := sharingReader{PipeReader: c2bR, busy: make(chan func() bool, 1)}
	b, err := New(Options{Command: []string{serverBin}, Client: in, ClientOut: b2cW, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	events := b.Hub().Subscribe(nil, 4096)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- b.Run(ctx); b2cW.Close() }()
	defer func() {
		c2bW.Close()
		<-runErr
	}()
	var busy func() bool
	select {
	case busy = <-in.busy:
	case <-time.After(waitLimit):
		t.Fatalf("the session did not call ShareWaits within %s", waitLimit)
	}
	if busy() {
		t.Fatal("before any request, busy; want not")
	}
	cl := client.NewClient(transport.NewIO(b2cR, c2bW, nil), client.WithProtocolVersion("2025-11-25"), client.WithDiscoverTimeout(waitLimit))
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "overlap-client", Version: "1"}
	ictx, icancel := context.WithTimeout(ctx, waitLimit)
	defer icancel()
	if _, err := cl.Initialize(ictx, init); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "ask"
			req.Params.Arguments = map[string]any{"schema": "pinned"}
			cl.CallTool(ctx, req)
		}()
	}
	// Each call is outstanding once its question is raised.
	nextEvent(t, events, "attention.requested")
	nextEvent(t, events, "attention.requested")
	if !busy() {
		t.Fatal("with two calls awaiting the server, not busy; want busy")
	}
}

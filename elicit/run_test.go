package elicit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// TestCloseStopsARunningProxy: Close from another goroutine ends Run and
// waits for every goroutine it started (goleak in TestMain checks none is
// left behind).
func TestCloseStopsARunningProxy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, sv := newMemConn(), newMemConn()
		mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
		defer mgr.Close()
		p := New(Options{Client: cl, Server: sv, Manager: mgr, Keepalive: 15 * time.Second})
		ended := make(chan Ending, 1)
		go func() { ended <- p.Run(context.Background()) }()
		synctest.Wait()
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		synctest.Wait()
		select {
		case e := <-ended:
			if e.Err != nil {
				t.Errorf("Run ended with %v; want a closed peer", e.Err)
			}
		default:
			t.Fatal("Run still runs after Close")
		}
		if err := p.Close(); err != nil {
			t.Errorf("a second Close: %v", err)
		}
	})
}

// TestRunAfterCloseStartsNothing: a closed proxy does not start again.
func TestRunAfterCloseStartsNothing(t *testing.T) {
	cl, sv := newMemConn(), newMemConn()
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
	defer mgr.Close()
	p := New(Options{Client: cl, Server: sv, Manager: mgr})
	p.Close()
	if e := p.Run(context.Background()); !errors.Is(e.Err, ErrClosed) {
		t.Errorf("Run after Close: got %+v; want Err ErrClosed", e)
	}
}

// TestStreamsStayOpenUntilClose: when the server leaves, Run returns and
// the client's stream stays writable, so the caller can fail the
// client's in-flight requests before Close, in the bridge's shutdown
// order.
func TestStreamsStayOpenUntilClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, sv := newMemConn(), newMemConn()
		mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
		defer mgr.Close()
		p := New(Options{Client: cl, Server: sv, Manager: mgr})
		ended := make(chan Ending, 1)
		go func() { ended <- p.Run(context.Background()) }()
		cl.in <- []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
		synctest.Wait()
		sv.Close() // the server goes away
		synctest.Wait()
		if e := <-ended; e.ClientClosed || e.Err != nil {
			t.Fatalf("Run ended with %+v; want the server gone", e)
		}
		written(cl)
		p.FailInflight("the server exited")
		want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"the server exited"}}`
		if got := written(cl); len(got) != 1 || got[0] != want {
			t.Errorf("after Run: the client got %q; want %s", got, want)
		}
		p.Close()
	})
}

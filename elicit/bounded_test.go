package elicit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// TestRoundsAreBounded: a server that never answers the bridge's retries
// cannot grow the proxy's rounds without bound: past maxTracked the oldest
// exchange is forgotten, its client gets an error that says so, and the
// server is told its retry is cancelled.
func TestRoundsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, sv := newMemConn(), newMemConn()
		mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
		defer mgr.Close()
		p := New(Options{Client: cl, Server: sv, Manager: mgr, Route: RouteRemote})
		p.maxTracked = 2
		n := 0
		p.newID = func() string { n++; return fmt.Sprintf("r%d", n) }
		ended := make(chan Ending, 1)
		go func() { ended <- p.Run(context.Background()) }()
		for id := 1; id <= 3; id++ {
			cl.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id))
			synctest.Wait()
			sv.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"resultType":"input_required","inputRequests":{},"requestState":"s%d"}}`, id, id))
			synctest.Wait()
		}
		if n := trackedBy(p).rounds; n != 2 {
			t.Errorf("%d rounds tracked; want 2", n)
		}
		out := strings.Join(written(cl), "\n")
		if !strings.Contains(out, `"id":1,"error"`) {
			t.Errorf("the client got %s; want an error for request 1", out)
		}
		sv.mu.Lock()
		var cancelled bool
		for _, b := range sv.out {
			cancelled = cancelled || strings.Contains(string(b), `"method":"notifications/cancelled","params":{"reason"`) && strings.Contains(string(b), `"requestId":"aep-mcp-bridge-r1"`)
		}
		sv.mu.Unlock()
		if !cancelled {
			t.Error("the server was not told the forgotten retry is cancelled")
		}
		cl.Close()
		<-ended
		p.Close()
	})
}

// boundedProxy runs a Proxy that tracks at most max entries per map, inside
// the caller's synctest bubble; stop ends it.
func boundedProxy(t *testing.T, route Route, max int) (p *Proxy, cl, sv *memConn, mgr *attention.Manager, stop func()) {
	t.Helper()
	cl, sv = newMemConn(), newMemConn()
	mgr = attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
	p = New(Options{Client: cl, Server: sv, Manager: mgr, Route: route})
	p.maxTracked = max
	n := 0
	p.newID = func() string { n++; return fmt.Sprintf("r%d", n) }
	ended := make(chan Ending, 1)
	go func() { ended <- p.Run(context.Background()) }()
	return p, cl, sv, mgr, func() {
		cl.Close()
		<-ended
		mgr.Close()
		p.Close()
	}
}

// tracked is how many entries each of a Proxy's bounded maps holds.
type tracked struct{ inflight, progress, questions, urlIDs, byClient, rounds, withdrawn int }

func trackedBy(p *Proxy) tracked {
	p.mu.Lock()
	defer p.mu.Unlock()
	return tracked{len(p.inflight), len(p.progress), len(p.questions), len(p.urlIDs), len(p.byClient), len(p.rounds), len(p.withdrawn)}
}

// TestProgressIsBounded: only the progress tokens of the client's tracked
// requests are kept; a server's progress for tokens it made up, and the
// tokens of requests that ended, leave nothing behind.
func TestProgressIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cl, sv, _, stop := boundedProxy(t, RouteRemote, 2)
		defer stop()
		for i := range 10 {
			sv.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"made-up-%d","progress":1}}`, i))
			synctest.Wait()
		}
		// A request whose client cancels it, and one the server answers.
		cl.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t1"}}}`)
		cl.in <- []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t2"}}}`)
		synctest.Wait()
		if n := trackedBy(p).progress; n != 2 {
			t.Errorf("%d progress tokens tracked with two requests in flight; want 2", n)
		}
		cl.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		sv.in <- []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)
		synctest.Wait()
		if n := trackedBy(p).progress; n != 0 {
			t.Errorf("%d progress tokens tracked after every request ended; want 0", n)
		}
	})
}

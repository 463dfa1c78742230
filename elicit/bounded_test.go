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
		p.mu.Lock()
		rounds := len(p.rounds)
		p.mu.Unlock()
		if rounds != 2 {
			t.Errorf("%d rounds tracked; want 2", rounds)
		}
		cl.mu.Lock()
		out := strings.Join(func() []string {
			var s []string
			for _, b := range cl.out {
				s = append(s, string(b))
			}
			return s
		}(), "\n")
		cl.mu.Unlock()
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

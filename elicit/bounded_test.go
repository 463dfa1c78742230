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
		p.setBound(2)
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
	p.setBound(max)
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
	return tracked{p.inflight.len(), len(p.progress), p.questions.len(), p.urlIDs.len(), len(p.byClient), p.rounds.len(), p.withdrawn.len()}
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

// TestInflightIsBounded: a server that never answers cannot grow the
// client requests the proxy tracks: past maxTracked the oldest is
// forgotten, its client gets an error with its id that says the bridge
// stopped waiting, the server is told it is cancelled, and the server's
// late response to it reaches nobody.
func TestInflightIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cl, sv, _, stop := boundedProxy(t, RouteRemote, 2)
		defer stop()
		for id := 1; id <= 3; id++ {
			cl.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t%d"}}}`, id, id))
			synctest.Wait()
		}
		if got, want := trackedBy(p), (tracked{inflight: 2, progress: 2}); got != want {
			t.Errorf("tracked %+v; want %+v", got, want)
		}
		want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"the bridge stopped waiting for the server's response to this request: more than 2 of the client's requests awaited the server at once; retry it, or wait for the others to complete first"}}`
		if got := strings.Join(written(cl), "\n"); got != want {
			t.Errorf("the client got %s\nwant %s", got, want)
		}
		out := written(sv)
		if got, want := out[len(out)-2], `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"the bridge stopped waiting for this request","requestId":1}}`; got != want {
			t.Errorf("the server got %s\nwant %s", got, want)
		}
		sv.in <- []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		sv.in <- []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)
		synctest.Wait()
		if got, want := strings.Join(written(cl), "\n"), `{"jsonrpc":"2.0","id":2,"result":{}}`; got != want {
			t.Errorf("after the late response to 1 and the response to 2 the client got %s; want only %s", got, want)
		}
	})
}

// TestByClientIsBounded: multi round-trip exchanges the bridge answers
// alone, whose questions nobody settles, are bounded with their requests:
// the oldest is forgotten, its question is dismissed, and its client gets
// an error.
func TestByClientIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cl, sv, mgr, stop := boundedProxy(t, RouteRemote, 2)
		defer stop()
		for id := 1; id <= 3; id++ {
			cl.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id))
			synctest.Wait()
			sv.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}},"requestState":"s%d"}}`, id, id))
			synctest.Wait()
		}
		if got := trackedBy(p); got.byClient != 2 || got.inflight != 2 {
			t.Errorf("tracked %+v; want 2 exchanges and 2 requests", got)
		}
		if n := len(mgr.Pending()); n != 2 {
			t.Errorf("%d questions pending; want 2: the forgotten exchange's is dismissed", n)
		}
		if got := strings.Join(written(cl), "\n"); !strings.Contains(got, `"id":1,"error"`) || strings.Count(got, `"error"`) != 1 {
			t.Errorf("the client got %s; want one error, for request 1", got)
		}
		for _, m := range written(sv) {
			if strings.Contains(m, "notifications/cancelled") {
				t.Errorf("the server got %s; its input_required answered request 1, so there is nothing to cancel", m)
			}
		}
	})
}

// TestQuestionsAreBounded: a server that raises questions nobody settles
// cannot grow the questions the proxy tracks, nor their elicitationIds:
// past maxTracked the oldest is dismissed on the bus, its server gets
// cancel, and the client's copy is withdrawn.
func TestQuestionsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cl, sv, mgr, stop := boundedProxy(t, RouteBoth, 2)
		defer stop()
		cl.in <- []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"c","version":"1"}}}`)
		synctest.Wait()
		written(sv)
		for i := 1; i <= 3; i++ {
			sv.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":"e%d","method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://auth.example/x","elicitationId":"u%d"}}`, i, i))
			synctest.Wait()
		}
		if got := trackedBy(p); got.questions != 2 || got.urlIDs != 2 {
			t.Errorf("tracked %+v; want 2 questions and 2 elicitationIds", got)
		}
		if n := len(mgr.Pending()); n != 2 {
			t.Errorf("%d questions pending on the bus; want 2", n)
		}
		if got, want := strings.Join(written(sv), "\n"), `{"jsonrpc":"2.0","id":"e1","result":{"action":"cancel"}}`; got != want {
			t.Errorf("the server got %s\nwant %s", got, want)
		}
		out := written(cl)
		if got, want := out[len(out)-2], `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"the bridge stopped waiting for it: too many questions were pending","requestId":"e1"}}`; got != want {
			t.Errorf("the client got %s\nwant %s", got, want)
		}
	})
}

// TestURLIDsAreBounded: the elicitationIds of URL questions the bridge
// raises from -32042 errors are bounded too: past maxTracked the oldest
// question is dismissed and its id forgotten.
func TestURLIDsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cl, sv, mgr, stop := boundedProxy(t, RouteRemote, 2)
		defer stop()
		cl.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
		synctest.Wait()
		sv.in <- []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"m","data":{"elicitations":[` +
			`{"mode":"url","message":"m","url":"https://auth.example/a","elicitationId":"u1"},` +
			`{"mode":"url","message":"m","url":"https://auth.example/b","elicitationId":"u2"},` +
			`{"mode":"url","message":"m","url":"https://auth.example/c","elicitationId":"u3"}]}}}`)
		synctest.Wait()
		if n := trackedBy(p).urlIDs; n != 2 {
			t.Errorf("%d elicitationIds tracked; want 2", n)
		}
		if n := len(mgr.Pending()); n != 2 {
			t.Errorf("%d questions pending; want 2: the oldest is dismissed", n)
		}
	})
}

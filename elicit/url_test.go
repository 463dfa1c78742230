package elicit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// TestURLLogsNameOnlySchemeAndHost: a URL-mode URL may carry secrets in
// its path and query (a one-time code, a session token); what the bridge
// logs of it is the scheme and the host, never more.
func TestURLLogsNameOnlySchemeAndHost(t *testing.T) {
	urls := []string{
		"http://evil.example/secret-path?token=s3cret",
		"javascript:secret-path?token=s3cret",
		"secret-path?token=s3cret",
		"https:///secret-path?token=s3cret",
		"ftp://user:s3cret@files.example/secret-path",
		"http://[::1/secret-path?token=s3cret",
	}
	for _, u := range urls {
		t.Run(u, func(t *testing.T) {
			h := &logRecorder{}
			cl, sv := newMemConn(), newMemConn()
			mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
			defer mgr.Close()
			p := New(Options{Client: cl, Server: sv, Manager: mgr, Route: RouteRemote, Logger: slog.New(h)})
			ctx, cancel := context.WithCancel(context.Background())
			ended := make(chan Ending, 1)
			go func() { ended <- p.Run(ctx) }()
			defer func() { cancel(); <-ended; p.Close() }()
			sv.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"url","message":"m","url":%q,"elicitationId":"e1"}}`, u))
			if got := sv.next(t); !strings.Contains(got, `"error"`) {
				t.Fatalf("the server got %s; want the URL refused", got)
			}
			// The same URL in a -32042 error, answered to a client request.
			cl.in <- []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
			sv.next(t)
			sv.in <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"error":{"code":-32042,"message":"m","data":{"elicitations":[{"mode":"url","message":"m","url":%q,"elicitationId":"e2"}]}}}`, u))
			cl.next(t)
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.records) == 0 {
				t.Fatal("nothing logged; want the refused URL logged")
			}
			for _, r := range h.records {
				line := r.Message
				r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
				for _, secret := range []string{"secret-path", "s3cret", "token"} {
					if strings.Contains(line, secret) {
						t.Errorf("logged %q; it shows %q of the URL", line, secret)
					}
				}
			}
		})
	}
}

func TestDisplayURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://auth.example/cb?code=x", "https://auth.example"},
		{"http://user:pw@127.0.0.1:8080/a", "http://127.0.0.1:8080"},
		{"javascript:alert(1)", "javascript:"},
		{"no scheme/at all", "(not an absolute URL)"},
		{"http://[::1/x", "(not an absolute URL)"},
	}
	for _, tt := range tests {
		if got := displayURL(tt.in); got != tt.want {
			t.Errorf("displayURL(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestDuplicateElicitationIDIsRefused: a URL-mode elicitation whose
// elicitationId is already pending is refused with a JSON-RPC error, and
// the pending one stays the one notifications/elicitation/complete
// resolves: no state is overwritten and nothing depends on map order.
func TestDuplicateElicitationIDIsRefused(t *testing.T) {
	_, _, sv, mgr, _ := startProxyEvents(t, RouteRemote)
	ask := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://auth.example/x","elicitationId":"e1"}}`, id)
	}
	sv.in <- []byte(ask(1))
	sv.in <- []byte(ask(2))
	want := `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: a URL-mode elicitation with this elicitationId is already pending; give each elicitation its own elicitationId"}}`
	if got := sv.next(t); got != want {
		t.Fatalf("the duplicate got %s\nwant %s", got, want)
	}
	if n := len(mgr.Pending()); n != 1 {
		t.Fatalf("%d questions pending; want 1", n)
	}
	sv.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e1"}}`)
	if got, want := sv.next(t), `{"jsonrpc":"2.0","id":1,"result":{"action":"accept"}}`; got != want {
		t.Fatalf("after complete the server got %s; want %s", got, want)
	}
	// Once settled, the id may be used again.
	sv.in <- []byte(ask(3))
	sv.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e1"}}`)
	if got, want := sv.next(t), `{"jsonrpc":"2.0","id":3,"result":{"action":"accept"}}`; got != want {
		t.Fatalf("a reused id got %s; want %s", got, want)
	}
}

// TestDuplicateElicitationIDIsRefusedEverywhere: an elicitationId that is
// pending is refused however the URL question comes: listed in a -32042
// error (the error still reaches the client, no second question is
// raised) or as a multi round-trip input request (the client's request
// fails with an error that says why). The pending question stays the one
// notifications/elicitation/complete resolves.
func TestDuplicateElicitationIDIsRefusedEverywhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cl, sv, mgr, stop := boundedProxy(t, RouteRemote, defaultMaxTracked)
		defer stop()
		step := func(c *memConn, msg string) {
			c.in <- []byte(msg)
			synctest.Wait()
		}
		step(sv, `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://auth.example/x","elicitationId":"u1"}}`)
		required := `{"jsonrpc":"2.0","id":%d,"error":{"code":-32042,"message":"m","data":{"elicitations":[{"mode":"url","message":"m","url":"https://auth.example/y","elicitationId":"%s"},{"mode":"url","message":"m","url":"https://auth.example/y","elicitationId":"u2"}]}}}`
		for _, r := range []struct {
			id  int
			eid string
		}{{2, "u1"}, {3, "u2"}} {
			step(cl, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, r.id))
			step(sv, fmt.Sprintf(required, r.id, r.eid))
		}
		if n := len(mgr.Pending()); n != 2 {
			t.Errorf("%d questions pending; want 2 (u1 from the request, u2 once from the -32042 errors)", n)
		}
		if got := written(cl); len(got) != 2 || !strings.Contains(got[0], "-32042") || !strings.Contains(got[1], "-32042") {
			t.Errorf("the client got %q; want both -32042 errors", got)
		}
		step(cl, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`)
		step(sv, `{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://auth.example/z","elicitationId":"u1"}}},"requestState":"s"}}`)
		want := `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: input request a: a URL-mode elicitation with this elicitationId is already pending; give each elicitation its own elicitationId"}}`
		if got := strings.Join(written(cl), "\n"); got != want {
			t.Errorf("the multi round-trip request got %s\nwant %s", got, want)
		}
		if n := len(mgr.Pending()); n != 2 {
			t.Errorf("%d questions pending after the multi round-trip duplicate; want 2", n)
		}
		written(sv)
		step(sv, `{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"u1"}}`)
		if got, want := strings.Join(written(sv), "\n"), `{"jsonrpc":"2.0","id":"e1","result":{"action":"accept"}}`; got != want {
			t.Errorf("after complete the server got %s; want %s", got, want)
		}
	})
}

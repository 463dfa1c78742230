package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestNavigationsOpenNothing is issue 21 item 5 with raw requests: under
// --mcp-auth none, what a browser's navigation or a page's subresource
// could send (Sec-Fetch-Mode navigate, a cross-site or same-site
// Sec-Fetch-Site without an allowed Origin, a GET /sse that does not ask
// for an event stream) opens no session and starts no server, while MCP
// clients, and an --allow-origin page's EventSource, still do.
func TestNavigationsOpenNothing(t *testing.T) {
	g := startGatewayAuth(t, Options{Session: sessionOpts(elicit.RouteRemote), AllowOrigins: []string{"http://dash.example"}})
	const htmlAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		wantStatus               int
		wantText                 string
	}{
		{"an iframe of another site", "GET", "/sse", "", map[string]string{"Accept": htmlAccept,
			"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "iframe"}, 403, "navigation"},
		{"an iframe of the same site", "GET", "/sse", "", map[string]string{"Accept": htmlAccept,
			"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": "iframe"}, 403, "navigation"},
		{"the address bar", "GET", "/sse", "", map[string]string{"Accept": htmlAccept,
			"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none", "Sec-Fetch-Dest": "document"}, 403, "navigation"},
		{"a script tag of another site", "GET", "/sse", "", map[string]string{"Accept": "*/*",
			"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "script"}, 403, "another site"},
		{"an image of the same site", "GET", "/sse", "", map[string]string{"Accept": "image/*,*/*;q=0.8",
			"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": "image"}, 403, "another site"},
		{"a browser without fetch metadata", "GET", "/sse", "", map[string]string{"Accept": htmlAccept}, 406, "text/event-stream"},
		{"a navigation POST", "POST", "/mcp", initBody, map[string]string{"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
			"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "iframe"}, 403, "navigation"},
		{"a no-cors POST of another site", "POST", "/mcp", initBody, map[string]string{"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
			"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "cross-site"}, 403, "another site"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			resp := g.request(t, tc.method, tc.path, h, tc.body)
			if resp.StatusCode == http.StatusOK {
				n := g.srv.Sessions()
				resp.Body.Close()
				t.Fatalf("answered 200 with %s; %d sessions open; want %d with %q", resp.Header.Get("Content-Type"), n, tc.wantStatus, tc.wantText)
			}
			code, msg := status(t, resp)
			if code != tc.wantStatus || !strings.Contains(msg, tc.wantText) {
				t.Errorf("got %d %q; want %d with %q", code, msg, tc.wantStatus, tc.wantText)
			}
			if n := g.srv.Sessions(); n != 0 {
				t.Errorf("%d sessions opened; want none", n)
			}
		})
	}

	// MCP clients still get sessions: an HTTP+SSE client, a streamable
	// HTTP client, and an allowed page's EventSource.
	opened := []struct {
		name   string
		header map[string]string
	}{
		{"an HTTP+SSE client", map[string]string{"Accept": "text/event-stream"}},
		{"an allowed page's EventSource", map[string]string{"Accept": "text/event-stream", "Origin": "http://dash.example",
			"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "empty"}},
	}
	for _, tc := range opened {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		resp := g.request(t, "GET", "/sse", h, "")
		if resp.StatusCode != http.StatusOK {
			code, msg := status(t, resp)
			t.Fatalf("%s: got %d %q; want its session", tc.name, code, msg)
		}
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		if line != "event: endpoint\n" {
			t.Errorf("%s: the stream began with %q; want the endpoint event", tc.name, line)
		}
		if n := g.srv.Sessions(); n != 1 {
			t.Errorf("%s: %d sessions; want 1", tc.name, n)
		}
		resp.Body.Close() // the HTTP+SSE session ends with its stream
		g.waitSessions(t, 0)
	}
	if msgs := readAll(t, (&raw{t: t, g: g}).post(initBody)); len(msgs) != 1 || !strings.Contains(msgs[0], `"result"`) {
		t.Errorf("a streamable HTTP client's initialize: got %v", msgs)
	}
}

// seenRequest is what a recorder saw of one request to the gateway.
type seenRequest struct {
	query, path, mode, site string
	status                  int
}

// recorder serves the gateway's handler on a port of its own and tells
// the test about every request, with the status it was answered.
type recorder struct {
	base string
	seen chan seenRequest
	got  map[string]seenRequest // by query, as the test read them
}

// record serves g's handler through a recorder; it stops with the test.
func record(t *testing.T, g *gw) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{base: "http://" + ln.Addr().String(), seen: make(chan seenRequest, 256), got: map[string]seenRequest{}}
	h := g.srv.Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &recordingWriter{ResponseWriter: w, report: func(code int) {
			rec.seen <- seenRequest{query: r.URL.RawQuery, path: r.URL.Path, mode: r.Header.Get("Sec-Fetch-Mode"), site: r.Header.Get("Sec-Fetch-Site"), status: code}
		}}
		h.ServeHTTP(rw, r)
		rw.WriteHeader(http.StatusOK) // reported once: a handler that wrote nothing answered 200
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return rec
}

// wait returns the request the recorder saw with query (the first such),
// waiting for it.
func (rec *recorder) wait(t *testing.T, query string) seenRequest {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		if s, ok := rec.got[query]; ok {
			return s
		}
		select {
		case s := <-rec.seen:
			if _, dup := rec.got[s.query]; !dup {
				rec.got[s.query] = s
			}
		case <-deadline:
			t.Fatalf("the gateway saw no request for ?%s", query)
		}
	}
}

// recordingWriter reports the status of a response once.
type recordingWriter struct {
	http.ResponseWriter
	once   sync.Once
	report func(int)
}

func (w *recordingWriter) WriteHeader(code int) {
	first := false
	w.once.Do(func() { first = true; w.report(code) })
	if first {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// chromium returns Debian's Chromium, skipping outside CI when it is
// absent.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testenv.Missing(t, "Debian's Chromium", "apt-get install chromium (.ci/run does)")
	return ""
}

// TestWebPagesOpenNoSessions is issue 21 item 5 in real headless
// Chromium: under --mcp-auth none, a page of another site that frames,
// scripts or images the gateway's /sse and /mcp, a page of the same site
// (another port) that frames /sse, and /sse typed in the address bar open
// no session. A page of an --allow-origin origin opens one with
// EventSource, which shows the probe reaches the gateway.
func TestWebPagesOpenNoSessions(t *testing.T) {
	exe := chromium(t)
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>page</title><p>a page</p>")
	}))
	t.Cleanup(pages.Close)
	port := pages.URL[strings.LastIndex(pages.URL, ":")+1:]
	friendly := "http://friendly.example:" + port
	g := startGatewayAuth(t, Options{Session: sessionOpts(elicit.RouteRemote), AllowOrigins: []string{friendly}})
	rec := record(t, g)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1, MAP friendly.example 127.0.0.1"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 2*waitLimit)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	visit := func(url, js string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](js+"; 0")); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string, s seenRequest) {
		t.Helper()
		if s.status == http.StatusOK {
			t.Errorf("%s (Sec-Fetch-Mode %q, Sec-Fetch-Site %q) was answered 200: it opened a session", what, s.mode, s.site)
		}
		if n := g.srv.Sessions(); n != 0 {
			t.Errorf("after %s: %d sessions; want none", what, n)
		}
	}

	// Elements are added once the page loaded, so navigating never waits
	// for a stream that does not end.
	add := func(tag, attr, url string) string {
		return fmt.Sprintf(`{const e = document.createElement(%q); e.%s = %q; document.body.appendChild(e);}`, tag, attr, url)
	}
	visit("http://evil.example:"+port+"/", add("iframe", "src", rec.base+"/sse?frame")+add("iframe", "src", rec.base+"/mcp?frame-mcp")+
		add("img", "src", rec.base+"/sse?img")+add("script", "src", rec.base+"/sse?script"))
	for _, q := range []string{"frame", "frame-mcp", "img", "script"} {
		refused("another site's "+q, rec.wait(t, q))
	}
	visit(pages.URL+"/", add("iframe", "src", rec.base+"/sse?same-site"))
	refused("a same-site iframe of /sse", rec.wait(t, "same-site"))

	visit(friendly+"/", fmt.Sprintf("window.es = new EventSource(%q)", rec.base+"/sse?friendly"))
	if s := rec.wait(t, "friendly"); s.status != http.StatusOK {
		t.Fatalf("an allowed page's EventSource was answered %d; want its session", s.status)
	}
	g.waitSessions(t, 1)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.es.close(); 0")); err != nil {
		t.Fatal(err)
	}
	g.waitSessions(t, 0)

	// Last, as it leaves the page: another site's page sends its tab to
	// /sse.
	visit("http://evil.example:"+port+"/", fmt.Sprintf("location.href = %q", rec.base+"/sse?top"))
	refused("another site's page sending its tab to /sse", rec.wait(t, "top"))
}

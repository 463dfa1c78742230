package endpoint

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// guardedEndpoint serves an endpoint built from o (Token and Hub filled in)
// on a loopback test server; it returns the server and its port.
func guardedEndpoint(t *testing.T, o Options) (*httptest.Server, string) {
	t.Helper()
	o.Token, o.Hub = testToken, bus.NewHubWith(bus.HubOptions{ReplayPerSession: 4, ReplaySessions: 8})
	ep, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ep.Handler())
	t.Cleanup(func() { ep.Close(); srv.Close() })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

// do sends a request to srv with the given Host and headers and returns the
// status and the body's error code.
func do(t *testing.T, srv *httptest.Server, method, path, host string, hdr http.Header, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e httpError
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error, resp.Header
}

func TestHostMustNameTheEndpoint(t *testing.T) {
	srv, port := guardedEndpoint(t, Options{AllowHosts: []string{"Bridge.Example", "pinned.example:9"}})
	auth := http.Header{"Authorization": {"Bearer " + testToken}}
	for _, tc := range []struct {
		name, host string
		want       int
	}{
		{name: "the listen address", host: "127.0.0.1:" + port, want: 200},
		{name: "localhost", host: "localhost:" + port, want: 200},
		{name: "localhost in capitals", host: "LOCALHOST:" + port, want: 200},
		{name: "another loopback IP", host: "127.0.0.2:" + port, want: 200},
		{name: "IPv6 loopback", host: "[::1]:" + port, want: 200},
		{name: "an allowed host on any port", host: "bridge.example:1234", want: 200},
		{name: "an allowed host without port", host: "bridge.example", want: 200},
		{name: "an allowed host:port", host: "pinned.example:9", want: 200},
		{name: "an allowed host on another port", host: "pinned.example:" + port, want: 403},
		{name: "a rebinding name", host: "evil.example:" + port, want: 403},
		{name: "loopback on another port", host: "127.0.0.1:1", want: 403},
		{name: "localhost without port", host: "localhost", want: 403},
		{name: "a subdomain of localhost", host: "x.localhost:" + port, want: 403},
		{name: "a non-loopback IP", host: "10.0.0.1:" + port, want: 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/.well-known/aep"} {
				got, code, _ := do(t, srv, "GET", path, tc.host, auth, "")
				if got != tc.want || (tc.want == 403 && code != "forbidden-host") {
					t.Errorf("GET %s with Host %q: %d %s; want %d", path, tc.host, got, code, tc.want)
				}
			}
		})
	}
}

func TestBrowserOriginMustBeTheEndpoints(t *testing.T) {
	srv, port := guardedEndpoint(t, Options{AllowOrigins: []string{"http://Dash.Example:3000"}})
	own := "http://127.0.0.1:" + port
	ingest := `{"aep":"0.1","id":"E1","type":"session.started","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/a","agent":"a","session":"z","seq":0}`
	for _, tc := range []struct {
		name, origin string
		want         int
		cors         bool
	}{
		{name: "no Origin (not a browser)", want: 202},
		{name: "the endpoint's own origin", origin: own, want: 202},
		{name: "an allowed origin", origin: "http://dash.example:3000", want: 202, cors: true},
		{name: "a foreign page", origin: "http://evil.example", want: 403},
		{name: "a page on another local port", origin: "http://127.0.0.1:1", want: 403},
		{name: "the own host over https", origin: "https://127.0.0.1:" + port, want: 403},
		{name: "an opaque origin", origin: "null", want: 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{"Authorization": {"Bearer " + testToken}, "Aep-Version": {"0.1"}, "Content-Type": {"application/json"}}
			if tc.origin != "" {
				hdr.Set("Origin", tc.origin)
			}
			got, code, h := do(t, srv, "POST", "/events", "127.0.0.1:"+port, hdr, ingest)
			if got != tc.want || (tc.want == 403 && code != "forbidden-origin") {
				t.Errorf("POST /events from %q: %d %s; want %d", tc.origin, got, code, tc.want)
			}
			if gotCORS := h.Get("Access-Control-Allow-Origin") != ""; gotCORS != tc.cors {
				t.Errorf("CORS header %q; want one: %v", h.Get("Access-Control-Allow-Origin"), tc.cors)
			}
			stream := "/stream?live=0&access_token=" + testToken
			wantStream := 200
			if tc.want == 403 {
				wantStream = 403
			}
			if got, _, _ := do(t, srv, "GET", stream, "127.0.0.1:"+port, http.Header{"Origin": hdr["Origin"]}, ""); got != wantStream {
				t.Errorf("GET /stream from %q: %d; want %d", tc.origin, got, wantStream)
			}
			wsHdr := http.Header{}
			if tc.origin != "" {
				wsHdr.Set("Origin", tc.origin)
			}
			c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/socket?access_token="+testToken, wsHdr)
			if tc.want == 403 {
				if err == nil || resp == nil || resp.StatusCode != 403 {
					t.Errorf("WebSocket from %q: %v; want 403", tc.origin, err)
				}
				if c != nil {
					c.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("WebSocket from %q: %v", tc.origin, err)
			}
			c.Close()
		})
	}
}

func TestPreflightForAllowedOriginsOnly(t *testing.T) {
	srv, port := guardedEndpoint(t, Options{AllowOrigins: []string{"https://dash.example"}})
	pre := func(origin string) http.Header {
		return http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"authorization,aep-version"}}
	}
	got, _, h := do(t, srv, "OPTIONS", "/events", "127.0.0.1:"+port, pre("https://dash.example"), "")
	if got != 204 || h.Get("Access-Control-Allow-Origin") != "https://dash.example" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "AEP-Version") {
		t.Errorf("preflight from an allowed origin: %d %v; want 204 with CORS headers", got, h)
	}
	if got, code, _ := do(t, srv, "OPTIONS", "/events", "127.0.0.1:"+port, pre("https://evil.example"), ""); got != 403 || code != "forbidden-origin" {
		t.Errorf("preflight from a foreign origin: %d %s; want 403", got, code)
	}
}

func TestAllowListsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{name: "a host with a path", o: Options{AllowHosts: []string{"example.com/x"}}, want: "--allow-host"},
		{name: "a host with a bad port", o: Options{AllowHosts: []string{"example.com:http"}}, want: "--allow-host"},
		{name: "an empty host", o: Options{AllowHosts: []string{" "}}, want: "--allow-host"},
		{name: "an origin without scheme", o: Options{AllowOrigins: []string{"dash.example"}}, want: "--allow-origin"},
		{name: "an origin with a path", o: Options{AllowOrigins: []string{"https://dash.example/app"}}, want: "--allow-origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Token, tc.o.Hub = testToken, bus.NewHub()
			if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestDiscoveryWithoutToken: without credentials, discovery is its public
// part (the token-proof capability, no claims); a wrong token is refused.
func TestDiscoveryWithoutToken(t *testing.T) {
	srv, _, _, _ := newTestEndpoint(t)
	for _, path := range []string{"/events", "/.well-known/aep"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc discoveryDoc
		json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(doc.AEP) == 0 || doc.Capabilities == nil || !proof.Advertised(doc.Capabilities.Experimental) {
			t.Errorf("GET %s without a token: %d %+v; want the public document with the token-proof capability", path, resp.StatusCode, doc)
		}
		if doc.Capabilities != nil && (doc.Capabilities.Control != nil || doc.Capabilities.Replay != nil) {
			t.Errorf("GET %s without a token leaked %+v", path, doc.Capabilities)
		}
		resp, _ = http.Get(srv.URL + path + "?access_token=wrong")
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("GET %s with a wrong token: %d; want 401", path, resp.StatusCode)
		}
	}
}

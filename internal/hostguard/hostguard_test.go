package hostguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// request is a request for host that arrived on local.
func request(host, local string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = host
	addr, _ := net.ResolveTCPAddr("tcp", local)
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
}

func TestHostAllowed(t *testing.T) {
	p, err := New([]string{"mcp.example", "fixed.example:9000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, host, local string
		want              bool
	}{
		{"the listen address", "127.0.0.1:8788", "127.0.0.1:8788", true},
		{"localhost on the port", "localhost:8788", "127.0.0.1:8788", true},
		{"another loopback IP", "127.0.0.2:8788", "127.0.0.1:8788", true},
		{"ipv6 loopback", "[::1]:8788", "127.0.0.1:8788", true},
		{"localhost on another port", "localhost:9999", "127.0.0.1:8788", false},
		{"a rebound name", "evil.example:8788", "127.0.0.1:8788", false},
		{"an allowed name, any port", "mcp.example:1234", "127.0.0.1:8788", true},
		{"an allowed name and port", "fixed.example:9000", "127.0.0.1:8788", true},
		{"an allowed name, other port", "fixed.example:9001", "127.0.0.1:8788", false},
		{"the interface address", "10.0.0.5:8788", "10.0.0.5:8788", true},
		{"default port", "localhost", "127.0.0.1:80", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.HostAllowed(request(tc.host, tc.local)); got != tc.want {
				t.Errorf("HostAllowed(%q on %s): got %v; want %v", tc.host, tc.local, got, tc.want)
			}
		})
	}
}

func TestOriginAllowed(t *testing.T) {
	p, err := New(nil, []string{"https://agent.example"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, origin      string
		wantCross, wantOK bool
	}{
		{"its own origin", "http://127.0.0.1:8788", false, true},
		{"an allowed origin", "https://agent.example", true, true},
		{"case does not matter", "HTTPS://Agent.Example", true, true},
		{"a foreign page", "http://evil.example", false, false},
		{"the allowed host over http", "http://agent.example", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cross, ok := p.OriginAllowed(request("127.0.0.1:8788", "127.0.0.1:8788"), tc.origin)
			if cross != tc.wantCross || ok != tc.wantOK {
				t.Errorf("OriginAllowed(%q): got %v, %v; want %v, %v", tc.origin, cross, ok, tc.wantCross, tc.wantOK)
			}
		})
	}
}

func TestNewRefusesMalformedEntries(t *testing.T) {
	tests := []struct {
		name           string
		hosts, origins []string
	}{
		{"a URL as a host", []string{"https://x.example"}, nil},
		{"a bad port", []string{"x.example:99999"}, nil},
		{"an empty host", []string{" "}, nil},
		{"an origin with a path", nil, []string{"https://x.example/app"}},
		{"an origin without scheme", nil, []string{"x.example"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.hosts, tc.origins); err == nil {
				t.Errorf("New(%q, %q): no error", tc.hosts, tc.origins)
			}
		})
	}
}

package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAllowFlagsReachTheEndpoint runs the bridge with --allow-host and
// --allow-origin: the named host and origin are served, others refused.
func TestAllowFlagsReachTheEndpoint(t *testing.T) {
	const token = "guard-token-0123456789abcdefghijklmnopqrstuvwxyz"
	_, stderr, _ := runInProcess(t, "--listen", "127.0.0.1:0", "--token", token, "--state-dir", t.TempDir(), "--log-dir", "off",
		"--allow-host", "bridge.example", "--allow-origin", "http://dash.example:3000", "--allow-origin", "https://ops.example", "--", "cat")
	addr := stderr.boundAddr(t, "AEP endpoint on http://")
	port := addr[strings.LastIndex(addr, ":")+1:]
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{name: "the listen address", host: addr, want: 200},
		{name: "an allowed host", host: "bridge.example:" + port, want: 200},
		{name: "another host", host: "evil.example:" + port, want: 403},
		{name: "an allowed origin", host: addr, origin: "http://dash.example:3000", want: 200},
		{name: "the second allowed origin", host: addr, origin: "https://ops.example", want: 200},
		{name: "another origin", host: addr, origin: "http://evil.example", want: 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+addr+"/.well-known/aep", nil)
			req.Host = tc.host
			req.Header.Set("Authorization", "Bearer "+token)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("Host %q Origin %q: %d; want %d", tc.host, tc.origin, resp.StatusCode, tc.want)
			}
		})
	}
}

func TestBadAllowOrigin(t *testing.T) {
	var stderr lockedBuffer
	err := run(context.Background(), []string{"--listen", "127.0.0.1:0", "--token", "guard-token-0123456789abcdefghijklmnopqrstuvwxyz", "--state-dir", t.TempDir(), "--log-dir", "off",
		"--allow-origin", "dash.example", "--", "cat"}, strings.NewReader(""), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--allow-origin") || !strings.Contains(err.Error(), "scheme://host") {
		t.Fatalf("got %v; want an error naming --allow-origin and the expected form", err)
	}
}

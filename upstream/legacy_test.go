package upstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// thiefServer is another server, which must get nothing: it counts the
// requests it gets and fails the test if one carries the --url's header.
func thiefServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var stolen atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		if r.Header.Get("X-Api-Key") != "" {
			t.Errorf("another server got the X-Api-Key header")
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(thief.Close)
	return thief, &stolen
}

// TestLegacyEndpointOfAnotherOriginIsRefused: an HTTP+SSE server whose
// endpoint event names another origin (another host or port, or http
// for an https --url) would get every client message with the --url's
// headers; Dial refuses it, saying why, and nothing reaches that origin.
// An endpoint of the same origin, written out in full, is taken.
func TestLegacyEndpointOfAnotherOriginIsRefused(t *testing.T) {
	thief, stolen := thiefServer(t)
	var endpoint atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: "+endpoint.Load().(string)+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	for _, tc := range []struct {
		name, endpoint string
		refused        bool
	}{
		{"another server (another port)", thief.URL + "/steal?session=1", true},
		{"another server, scheme-relative", "//" + strings.TrimPrefix(thief.URL, "http://") + "/steal", true},
		{"the same host and port over plain http", "http://" + host + "/messages", true},
		{"the same origin in full", "https://" + host + "/messages?session=1", false},
		{"a path", "/messages?session=1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint.Store(tc.endpoint)
			c, err := Dial(Options{URL: srv.URL + "/sse", Transport: "sse", Client: srv.Client(),
				Header: http.Header{"X-Api-Key": {"api-key-for-the-real-server"}}})
			if !tc.refused {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				c.Close()
				return
			}
			if err == nil {
				// What the attack gets: the client's first message.
				werr := c.writeMessage([]byte(initialize))
				c.Close()
				t.Fatalf("Dial took the endpoint %s (the first message: %v)", tc.endpoint, werr)
			}
			if !strings.Contains(err.Error(), "another origin") || strings.Contains(err.Error(), "steal") {
				t.Errorf("the error: %v; want it to say another origin, by scheme and host only", err)
			}
		})
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
}

// TestRedirectsAreNotFollowed: a server that redirects (307 keeps the
// body) would have the bridge send the client's message and the --url's
// headers to wherever it says. The bridge does not follow it: the client
// gets an error naming the redirect's origin, and the other server gets
// nothing; on the streamable and the HTTP+SSE transports.
func TestRedirectsAreNotFollowed(t *testing.T) {
	thief, stolen := thiefServer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.URL+"/steal?token=from-the-redirect", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	header := http.Header{"X-Api-Key": {"api-key-for-the-real-server"}}
	want := "HTTP 307, a redirect to " + thief.URL + ", which the bridge does not follow"

	t.Run("streamable", func(t *testing.T) {
		c := dial(t, Options{URL: srv.URL + "/mcp", Transport: "streamable", Header: header})
		if err := c.writeMessage([]byte(initialize)); err != nil {
			t.Fatal(err)
		}
		got := next(t, c)
		if !strings.Contains(got, want) || !strings.Contains(got, "point --url at the final URL") || strings.Contains(got, "from-the-redirect") {
			t.Errorf("the client got %s; want an error saying %q, without the redirect's path", got, want)
		}
	})
	t.Run("HTTP+SSE", func(t *testing.T) {
		c, err := Dial(Options{URL: srv.URL + "/sse", Transport: "sse", Header: header})
		if err == nil {
			c.Close()
			t.Fatal("Dial followed the redirect")
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Dial: %v; want it to say %q", err, want)
		}
	})
	if n := stolen.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

package upstream

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// pollingServer is a streamable HTTP server that ends every event stream
// right after its priming event, which sets retry: 500, as a server that
// polls (MCP 2025-11-25 basic/transports, "Sending Messages to the
// Server" and "Listening for Messages from the Server") does: the POST's
// response stream, each resumption of it, and each standing GET stream.
// Every other resumption ends by breaking the connection rather than
// cleanly. It records when each stream ended and when each GET came.
type pollingServer struct {
	// mu guards the fields below.
	mu      sync.Mutex
	n       int
	ended   map[string][]time.Time   // by kind: "post", "resume", "standing"
	arrived map[string][]time.Time   // GETs, by kind: "resume", "standing"
	first   map[string]chan struct{} // closed when the first stream of a kind ended
	polled  chan struct{}            // closed when both kinds of GET came twice
	both    bool                     // polled is closed
}

const pollRetry = 500 * time.Millisecond

func newPollingServer(t *testing.T) (*pollingServer, string) {
	p := &pollingServer{ended: map[string][]time.Time{}, arrived: map[string][]time.Time{},
		first: map[string]chan struct{}{"post": make(chan struct{}), "standing": make(chan struct{})}, polled: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	return p, srv.URL
}

// answerInitialize answers an initialize with a session.
func answerInitialize(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "s1")
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"test","version":"1"}}}`)
}

func (p *pollingServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == "POST" && strings.Contains(string(body), `"initialize"`):
		answerInitialize(w)
	case r.Method == "POST" && strings.Contains(string(body), `"tools/call"`):
		p.prime(w, "post", "p")
	case r.Method == "POST" || r.Method == "DELETE":
		w.WriteHeader(http.StatusAccepted)
	case strings.HasPrefix(r.Header.Get("Last-Event-ID"), "p-"):
		p.arrive("resume")
		if p.prime(w, "resume", "p")%2 == 0 {
			panic(http.ErrAbortHandler) // a broken connection, not a clean end
		}
	default:
		p.arrive("standing")
		p.prime(w, "standing", "g")
	}
}

// prime sends a priming event with an id and retry: 500, notes the end
// of the stream, and returns the event's number.
func (p *pollingServer) prime(w http.ResponseWriter, kind, prefix string) int {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "id: %s-%d\nretry: %d\ndata:\n\n", prefix, n, pollRetry.Milliseconds())
	w.(http.Flusher).Flush()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended[kind] = append(p.ended[kind], time.Now())
	if ch, ok := p.first[kind]; ok && len(p.ended[kind]) == 1 {
		close(ch)
	}
	return n
}

func (p *pollingServer) arrive(kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arrived[kind] = append(p.arrived[kind], time.Now())
	if !p.both && len(p.arrived["resume"]) >= 2 && len(p.arrived["standing"]) >= 2 {
		p.both = true
		close(p.polled)
	}
}

// within counts the GETs of a kind that came in the window after from.
func (p *pollingServer) within(kind string, from time.Time, window time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, at := range p.arrived[kind] {
		if at.After(from) && !at.After(from.Add(window)) {
			n++
		}
	}
	return n
}

// TestRetryPacesResumesAndReopens is the transport's "MUST respect the
// retry field" against a real loopback server that ends every stream at
// once with retry: 500: the resumptions of a POST's response stream and
// the reopenings of the standing GET stream each come at most once per
// 500 ms, counted over a window that starts when the first stream of
// each kind ended; and the transport goes on polling both (each kind of
// GET comes at least twice).
func TestRetryPacesResumesAndReopens(t *testing.T) {
	t.Parallel()
	p, url := newPollingServer(t)
	c := dial(t, Options{URL: url, Transport: "streamable"})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`))
	next(t, c)
	c.writeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`))
	for _, kind := range []string{"post", "standing"} {
		select {
		case <-p.first[kind]:
		case <-time.After(waitLimit):
			t.Fatalf("the first %s stream never ended", kind)
		}
	}
	p.mu.Lock()
	postEnded, standingEnded := p.ended["post"][0], p.ended["standing"][0]
	p.mu.Unlock()
	// The measurement window, not a synchronisation: the counts below
	// are what the transport did in it.
	const window = 3 * pollRetry
	<-time.After(time.Until(later(postEnded, standingEnded).Add(window)))
	select {
	case <-p.polled:
	case <-time.After(waitLimit):
		t.Errorf("the transport stopped polling: %d resume GETs and %d standing GETs in all; want at least 2 of each", len(p.arrived["resume"]), len(p.arrived["standing"]))
	}
	c.Close()
	most := int(window / pollRetry)
	for _, k := range []struct {
		kind, after string
		from        time.Time
	}{{"resume", "the POST's response stream", postEnded}, {"standing", "the first standing stream", standingEnded}} {
		n := p.within(k.kind, k.from, window)
		t.Logf("%s GETs in the %v after %s ended: %d (at most %d allowed)", k.kind, window, k.after, n, most)
		if n > most {
			t.Errorf("%d %s GETs in %v; want at most one per %v (%d)", n, k.kind, window, pollRetry, most)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestCloseEndsTheWaits: a server that asks for an hour between
// reconnections leaves the transport waiting to reopen its GET stream and
// to resume a response stream; Close ends both waits at once (the
// package's leak check fails any goroutine left waiting).
func TestCloseEndsTheWaits(t *testing.T) {
	t.Parallel()
	waiting := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == "POST" && strings.Contains(string(body), `"initialize"`):
			answerInitialize(w)
		case r.Method == "POST" && strings.Contains(string(body), `"tools/call"`), r.Method == "GET" && r.Header.Get("Last-Event-ID") == "":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: e1\nretry: 3600000\ndata:\n\n")
			w.(http.Flusher).Flush()
			waiting <- struct{}{}
		case r.Method == "DELETE":
			w.WriteHeader(http.StatusAccepted)
		default:
			t.Errorf("%s with Last-Event-ID %q: the transport did not wait the hour the server asked for", r.Method, r.Header.Get("Last-Event-ID"))
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`))
	next(t, c)
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`))
	for range 2 {
		select {
		case <-waiting:
		case <-time.After(waitLimit):
			t.Fatal("the server's streams were not both opened")
		}
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatal("Close did not return while the transport waited to reconnect")
	}
}

// TestCancelStopsResuming: once the client cancels a request (MCP
// notifications/cancelled), its response stream is no longer resumed: a
// resumed stream open then is closed, and the request is not failed (the
// client expects no response to it).
func TestCancelStopsResuming(t *testing.T) {
	t.Parallel()
	resumed, dropped := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == "POST" && strings.Contains(string(body), `"tools/call"`):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: p1\nretry: 100\ndata:\n\n")
		case r.Method == "POST" && strings.Contains(string(body), `"ping"`):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":3,"result":{}}`)
		case r.Method == "POST" || r.Method == "DELETE":
			w.WriteHeader(http.StatusAccepted)
		default: // the resumption: open until the client lets go
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			close(resumed)
			<-r.Context().Done()
			close(dropped)
		}
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`))
	for _, step := range []struct {
		ch   chan struct{}
		what string
	}{{resumed, "the response stream was not resumed"}, {nil, ""}, {dropped, "the resumed stream stayed open after the client cancelled the request"}} {
		if step.ch == nil {
			c.writeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`))
			continue
		}
		select {
		case <-step.ch:
		case <-time.After(waitLimit):
			t.Fatal(step.what)
		}
	}
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
	if got, want := next(t, c), `{"jsonrpc":"2.0","id":3,"result":{}}`; got != want {
		t.Fatalf("got %s; want the ping's answer, and nothing for the cancelled request", got)
	}
}

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dial connects to url and closes the Conn when the test ends.
func dial(t *testing.T, o Options) *Conn {
	t.Helper()
	c, err := Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// next returns the next server message, or fails the test.
func next(t *testing.T, c *Conn) string {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		f, _ := c.Read(context.Background())
		got <- whole(f)
	}()
	select {
	case m := <-got:
		return string(m)
	case <-time.After(waitLimit):
		t.Fatal("no message from the server")
		return ""
	}
}

// whole returns a frame's message in one piece.
func whole(f jsonrpc.Frame) []byte {
	if f.Rest == nil {
		return f.Head
	}
	rest, _ := io.ReadAll(f.Rest)
	return append(f.Head, rest...)
}

// rpcMessage is what the tests read of a JSON-RPC message.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func decode(t *testing.T, s string) rpcMessage {
	t.Helper()
	var m rpcMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%q is not JSON-RPC: %v", s, err)
	}
	return m
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

// TestErrorStatusFailsTheRequest checks that a status the transport cannot
// go on from answers the client's request with a JSON-RPC error that
// says what happened, so the client never waits for nothing.
func TestErrorStatusFailsTheRequest(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   []string
	}{
		{name: "401 says to pass the header", status: 401, want: []string{"the server wants credentials", "HTTP 401", "--header 'Authorization: …'"}},
		{name: "403 says to pass the header", status: 403, want: []string{"HTTP 403", "--header"}},
		{name: "500 quotes the body", status: 500, body: "  database down\n", want: []string{"the server answered POST with HTTP 500: database down"}},
		{name: "418 without a body", status: 418, want: []string{"the server answered POST with HTTP 418"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
			c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
			c.writeMessage([]byte(`{"jsonrpc":"2.0","id":"a-1","method":"tools/list"}`))
			m := decode(t, next(t, c))
			if m.Error == nil {
				t.Fatalf("got %+v; want an error response", m)
			}
			if diff := cmp.Diff(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage(`"a-1"`), Error: m.Error}, m); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
			if m.Error.Code != -32000 {
				t.Errorf("got code %d; want -32000", m.Error.Code)
			}
			for _, w := range tt.want {
				if !strings.Contains(m.Error.Message, w) {
					t.Errorf("got message %q; want it to contain %q", m.Error.Message, w)
				}
			}
		})
	}
}

// TestResponseStreamResumesAfterPriming drives the resumability section
// of the streamable HTTP transport with a server that ends its lines with
// CR alone: the POST's stream carries only a priming event (an id and no
// data) and drops; the transport must resume it with GET and that id. The
// message comes over two data lines: it reaches the proxy as one line, its
// join a space.
func TestResponseStreamResumesAfterPriming(t *testing.T) {
	var mu sync.Mutex
	var lastEventIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		switch r.Method {
		case "POST":
			io.WriteString(w, ": hello\rid: p-7\r\r") // then the connection ends
		case "GET":
			mu.Lock()
			lastEventIDs = append(lastEventIDs, r.Header.Get("Last-Event-ID"))
			mu.Unlock()
			io.WriteString(w, "id: p-8\rdata: {\"jsonrpc\":\"2.0\",\r")
			io.WriteString(w, "data: \"id\":\"call-1\",\"result\":{}}\r\r")
		}
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{}}`))
	if got, want := next(t, c), `{"jsonrpc":"2.0", "id":"call-1","result":{}}`; got != want {
		t.Fatalf("got %q; want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"p-7"}, lastEventIDs); diff != "" {
		t.Errorf("Last-Event-ID of the GETs (-want +got):\n%s", diff)
	}
}

// TestResponseStreamLargeEvents: an event over the size read whole
// reaches the proxy as a stream (Frame.Rest), byte for byte, relating to
// its request, and answers it; one whose head is not JSON is skipped, and
// the request fails when its stream ends unanswered.
func TestResponseStreamLargeEvents(t *testing.T) {
	const size = 17 << 20 // over the 16 MiB an event could hold before
	answer := `{"jsonrpc":"2.0","id":2,"result":{"text":"` + strings.Repeat("x", size) + `"}}`
	tests := []struct {
		name   string
		events string
		want   string // the message the proxy gets; "" for the error
		err    string
	}{
		{name: "a large answer", events: "id: e1\nevent: message\ndata: " + answer + "\n\n", want: answer},
		{name: "a large event that is not JSON", events: "data: " + strings.Repeat("x", size) + "\n\n",
			err: "the server closed the response stream before answering"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tt.events)
			}))
			t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
			c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
			c.writeMessage([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}`))
			type frame struct {
				f       jsonrpc.Frame
				related json.RawMessage
				rest    []byte
				err     error
			}
			got := make(chan frame, 1)
			go func() {
				f, err := c.Read(context.Background())
				related := f.Related
				fr := frame{f: f, related: related, err: err}
				if err == nil && f.Rest != nil {
					fr.rest, fr.err = io.ReadAll(f.Rest)
				}
				got <- fr
			}()
			var fr frame
			select {
			case fr = <-got:
			case <-time.After(waitLimit):
				t.Fatal("no message from the server")
			}
			if fr.err != nil {
				t.Fatal(fr.err)
			}
			if tt.want == "" {
				m := decode(t, string(fr.f.Head))
				if fr.f.Rest != nil || m.Error == nil || !strings.Contains(m.Error.Message, tt.err) {
					t.Fatalf("got %.200s; want an error that contains %q", fr.f.Head, tt.err)
				}
				return
			}
			if fr.f.Rest == nil || len(fr.f.Head) > DefaultMaxMessage+64<<10 {
				t.Fatalf("got a frame with a %d-byte head and Rest %v; want it streamed past %d bytes", len(fr.f.Head), fr.f.Rest != nil, DefaultMaxMessage)
			}
			if whole := string(fr.f.Head) + string(fr.rest); whole != tt.want {
				t.Fatalf("got %d bytes that differ from the %d-byte answer", len(whole), len(tt.want))
			}
			if string(fr.related) != "2" {
				t.Fatalf("the message relates to %s; want request 2", fr.related)
			}
		})
	}
}

// TestLegacyTransport runs the HTTP+SSE transport against a server that
// sends its endpoint event with CRLF line ends and its messages unnamed.
func TestLegacyTransport(t *testing.T) {
	stream := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "\uFEFFevent: endpoint\r\ndata: /messages?session=s1\r\n\r\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case ev := <-stream:
					io.WriteString(w, ev)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case r.Method == "POST" && r.URL.Path == "/messages" && r.URL.Query().Get("session") == "s1":
			var m rpcMessage
			json.NewDecoder(r.Body).Decode(&m)
			w.WriteHeader(http.StatusAccepted)
			stream <- fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2024-11-05\"}}\n\n", m.ID)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	c := dial(t, Options{URL: srv.URL + "/sse", Transport: "sse"})
	if err := c.writeMessage([]byte(initialize)); err != nil {
		t.Fatal(err)
	}
	if got, want := next(t, c), `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05"}}`; got != want {
		t.Fatalf("got %s; want %s", got, want)
	}
}

// TestGetStreamStopsOn405 checks the standing GET stream: a server that
// answers 405 offers none, and is not asked again; any other failure is
// retried.
func TestGetStreamStopsOn405(t *testing.T) {
	tests := []struct {
		name   string
		status int
		retry  bool
	}{
		{name: "405 means no stream", status: http.StatusMethodNotAllowed},
		{name: "503 is retried", status: http.StatusServiceUnavailable, retry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			again := make(chan struct{})
			var gets sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gets.Lock()
				n++
				if n == 2 {
					close(again)
				}
				gets.Unlock()
				w.WriteHeader(tt.status)
			}))
			t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
			c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
			returned := make(chan struct{})
			c.wg.Add(1)
			go func() {
				defer close(returned)
				c.keepGetStream(make(chan struct{}))
			}()
			select {
			case <-returned:
				if tt.retry {
					t.Fatal("the GET stream gave up; want it retried")
				}
			case <-again:
				if !tt.retry {
					t.Fatal("the GET stream was asked for again after a 405")
				}
			}
			c.Close()
			<-returned
		})
	}
}

// TestCloseDuringALargeEvent closes the Conn while the proxy reads the
// Rest of a large event: the reader gets an error or the end, and Close
// returns.
func TestCloseDuringALargeEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"jsonrpc":"2.0","id":2,"result":{"text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range 64 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, "\"}}\n\n")
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
	c.writeMessage([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}`))
	f, err := c.Read(context.Background())
	if err != nil || f.Rest == nil {
		t.Fatalf("got a frame with Rest %v, %v; want a streamed event", f.Rest != nil, err)
	}
	if _, err := io.CopyN(io.Discard, f.Rest, 1<<20); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	buf := make([]byte, 512) // small reads, so the reading overlaps Close
	for {
		if _, err := f.Rest.Read(buf); err != nil {
			break // the end of the stream, however Close cut it
		}
	}
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatal("Close did not return while a large event was being read")
	}
}

// TestLegacyLargeMessage: a message event of the HTTP+SSE transport over
// the size read whole reaches the proxy as a stream, byte for byte.
func TestLegacyLargeMessage(t *testing.T) {
	answer := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("y", 5<<20) + `"}}`
	answered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case "GET":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: /messages\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-answered:
				io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
			<-r.Context().Done()
		case "POST":
			w.WriteHeader(http.StatusAccepted)
			close(answered)
		}
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	c := dial(t, Options{URL: srv.URL + "/sse", Transport: "sse"})
	c.writeMessage([]byte(initialize))
	f, err := c.Read(context.Background())
	if err != nil || f.Rest == nil {
		t.Fatalf("got a frame with Rest %v, %v; want the message streamed", f.Rest != nil, err)
	}
	rest, err := io.ReadAll(f.Rest)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(f.Head) + string(rest); got != answer {
		t.Fatalf("got %d bytes that differ from the %d-byte answer", len(got), len(answer))
	}
}

// TestWriteFrames: a Frame written whole and one written as a head and a
// stream of the rest reach the server as the bytes they carry, and a
// Frame with no bytes posts nothing.
func TestWriteFrames(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
	ctx := t.Context()
	first := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	for _, f := range []jsonrpc.Frame{
		{Head: []byte(first)},
		{},
		{Head: []byte(`{"jsonrpc":"2.0","method":"notifications/`), Rest: strings.NewReader(`roots/list_changed"}`)},
	} {
		if err := c.Write(ctx, f); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	c.Close() // waits for every POST
	want := []string{first, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("the server received (-want +got):\n%s", diff)
	}
}

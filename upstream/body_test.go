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

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// TestWriteStreamRacesClose streams messages from several goroutines
// while Close runs. Every POST goroutine a WriteStream starts must be one
// Close waits for: counted under the lock that Close's closed flag is
// set under, or not started at all. Run with -race, which reports a
// WaitGroup.Add that is not ordered before a concurrent Wait.
func TestWriteStreamRacesClose(t *testing.T) {
	posted := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: /messages\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == "POST" && r.URL.Path == "/messages":
			// Held until the client gives up: the writers queue behind
			// the first one while Close runs.
			io.Copy(io.Discard, r.Body)
			select {
			case posted <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	const rounds, writers = 50, 8
	for range rounds {
		c, err := Dial(Options{URL: srv.URL + "/sse", Transport: "sse"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range writers {
			wg.Go(func() {
				<-start
				err := c.writeStream(func(w io.Writer) error {
					_, err := io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)
					return err
				})
				if err != nil && err != io.ErrClosedPipe {
					t.Errorf("writeStream: %v", err)
				}
			})
		}
		close(start)
		<-posted // the first writer holds the order; the rest queue behind it
		c.Close()
		wg.Wait()
	}
}

// modernCall is a tools/call of MCP 2026-07-28 (its version in _meta)
// whose arguments carry n bytes; its id comes last, after the bytes.
func modernCall(id, n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"store","arguments":{"blob":"%s"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"id":%d}`,
		strings.Repeat("a", n), id)
}

// TestLargeModernResponseIsStreamed checks that a JSON response over
// DefaultMaxMessage to a 2026-07-28 request reaches the reader as its
// head and a stream of the rest, not read whole: the server sends the
// rest only once the reader has the head, so a transport that buffered
// the body would never hand it over.
func TestLargeModernResponseIsStreamed(t *testing.T) {
	const size = DefaultMaxMessage + 1<<20
	head := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}`
	gotHead := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, head+strings.Repeat("b", size))
		w.(http.Flusher).Flush()
		select {
		case <-gotHead:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, strings.Repeat("c", 1<<20)+tail)
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	c := dial(t, Options{URL: srv.URL})
	if err := c.writeMessage([]byte(modernCall(7, 10))); err != nil {
		t.Fatal(err)
	}
	type frame struct {
		f   jsonrpc.Frame
		err error
	}
	got := make(chan frame, 1)
	go func() {
		f, err := c.Read(context.Background())
		got <- frame{f, err}
	}()
	var fr frame
	select {
	case fr = <-got:
	case <-time.After(waitLimit):
		t.Fatal("no frame while the server holds the rest of its response: the transport reads the body whole")
	}
	if fr.err != nil {
		t.Fatal(fr.err)
	}
	close(gotHead)
	if fr.f.Rest == nil || len(fr.f.Head) > DefaultMaxMessage+1 {
		t.Fatalf("got a head of %d bytes and rest %v; want at most %d bytes and a stream", len(fr.f.Head), fr.f.Rest, DefaultMaxMessage+1)
	}
	rest, err := io.ReadAll(fr.f.Rest)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(fr.f.Head)+len(rest), len(head)+size+1<<20+len(tail); got != want {
		t.Errorf("got %d bytes in all; want %d", got, want)
	}
}

// TestModernMessageOverTheLimit checks that a client message the
// transport must read whole (a 2026-07-28 request: its headers mirror its
// body) and that is over MaxWholeMessage is not posted, and its request
// is answered with an error that names the limit; the next one goes.
func TestModernMessageOverTheLimit(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sizes = append(sizes, len(b))
		mu.Unlock()
		var m rpcMessage
		json.Unmarshal(b, &m)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
	}))
	t.Cleanup(srv.Close) // after the Conn's Close, which dial registers later
	const limit = 64 << 10
	c := dial(t, Options{URL: srv.URL, MaxWholeMessage: limit})
	stream := func(msg string) error {
		return c.writeStream(func(w io.Writer) error {
			for len(msg) > 0 { // in pieces, as the proxy writes
				n := min(len(msg), 4096)
				if _, err := io.WriteString(w, msg[:n]); err != nil {
					return err
				}
				msg = msg[n:]
			}
			return nil
		})
	}
	if err := stream(modernCall(8, limit)); err != nil {
		t.Fatalf("writeStream of the large message: %v", err)
	}
	m := decode(t, next(t, c))
	want := fmt.Sprintf("over the %d-byte limit", limit)
	if string(m.ID) != "8" || m.Error == nil || !strings.Contains(m.Error.Message, want) {
		t.Fatalf("got %+v; want an error for id 8 that contains %q", m, want)
	}
	small := modernCall(9, 10)
	if err := stream(small); err != nil {
		t.Fatal(err)
	}
	if m := decode(t, next(t, c)); string(m.ID) != "9" || m.Error != nil {
		t.Fatalf("got %+v; want the result of id 9", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]int{len(small)}, sizes); diff != "" {
		t.Errorf("sizes of the POSTed bodies (-want +got):\n%s", diff)
	}
}

// TestModernResponseOverTheLimit checks that a client's response to a
// server request, over MaxWholeMessage, reaches the server as an error
// response with the same id (so it does not wait forever), and that the
// client is not handed an error under the server's request id: the next
// thing it reads is the answer to its own next request.
func TestModernResponseOverTheLimit(t *testing.T) {
	bodies := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(b, &m)
		if m.Method == "" {
			bodies <- string(b)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
	}))
	t.Cleanup(srv.Close)
	const limit = 64 << 10
	c := dial(t, Options{URL: srv.URL, MaxWholeMessage: limit})
	resp := `{"jsonrpc":"2.0","result":{"action":"accept","content":{"note":"` + strings.Repeat("n", limit) + `"}},"id":"srv-7"}`
	if err := c.writeStream(func(w io.Writer) error { _, err := io.WriteString(w, resp); return err }); err != nil {
		t.Fatalf("writeStream: %v", err)
	}
	var got rpcMessage
	select {
	case b := <-bodies:
		if err := json.Unmarshal([]byte(b), &got); err != nil {
			t.Fatalf("the server got %q: %v", b, err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the server got nothing in place of the oversized response")
	}
	if string(got.ID) != `"srv-7"` || got.Error == nil || !strings.Contains(got.Error.Message, fmt.Sprintf("over the %d-byte limit", limit)) {
		t.Fatalf("the server got %+v; want an error response for srv-7 naming the limit", got)
	}
	if strings.Contains(got.Error.Message, "nnnn") {
		t.Fatal("the error carries the response's content")
	}
	if err := c.writeMessage([]byte(modernCall(9, 10))); err != nil {
		t.Fatal(err)
	}
	if m := decode(t, next(t, c)); string(m.ID) != "9" || m.Error != nil {
		t.Fatalf("the client read %+v first; want the result of its request 9", m)
	}
}

package upstream

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// TestResponseStreamsReuseTheConnection: a server that answers each POST
// with an event stream it ends after the response (as the TypeScript
// SDK's does) gets the POSTs of a session on the connections it already
// has, as a direct client's: the transport reads a stream to its end
// once the response came, instead of closing it, and the connection with
// it, a moment early. (A call that follows its predecessor's response at
// once may find that stream not yet ended, so two connections take
// turns, or three: the test asks for reuse, not for one.)
func TestResponseStreamsReuseTheConnection(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	answered := make(chan struct{}, 10) // the test read a response: a stream may end
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		m := decodeRequest(t, r)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // the stream starts before its events, as SDK servers start it
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", m.ID)
		w.(http.Flusher).Flush()
		// The stream ends after the client has the response, apart from
		// it, as a server that answers first and then closes ends it.
		select {
		case <-answered:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
	for i := range 10 {
		if err := c.Write(t.Context(), frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, i+1))); err != nil {
			t.Fatal(err)
		}
		if got := next(t, c); !strings.Contains(got, fmt.Sprintf(`"id":%d,"result"`, i+1)) {
			t.Fatalf("call %d: got %s", i+1, got)
		}
		answered <- struct{}{}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) > 5 {
		t.Errorf("ten POSTs came on %d connections; want each connection reused, five at most", len(conns))
	}
}

// decodeRequest reads the JSON-RPC id and method of a POSTed message.
func decodeRequest(t *testing.T, r *http.Request) rpcMessage {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("reading the POST: %v", err)
	}
	return decode(t, string(b))
}

// frame is a whole message as a Frame.
func frame(msg string) jsonrpc.Frame { return jsonrpc.Frame{Head: []byte(msg)} }

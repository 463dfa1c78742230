package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// echoServer is a streamable-HTTP MCP server reduced to what a round trip
// needs: initialize starts a session, a request gets a JSON result with
// its own id, a notification a 202, and GET (no standing stream) a 405.
func echoServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		i := bytes.Index(body, []byte(`"id":`))
		if i < 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		id := body[i+5:]
		id = id[:bytes.IndexAny(id, ",}")]
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(body, []byte(`"initialize"`)) {
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}}`, id)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ping"}]}}`, id)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkPostRoundTrip measures one tools/call POSTed to a remote server
// and its JSON response handed to the reader, over loopback HTTP with a
// kept-alive connection: the transport's own work per request.
func BenchmarkPostRoundTrip(b *testing.B) {
	srv := echoServer(b)
	c, err := Dial(Options{URL: srv.URL + "/mcp", Transport: "streamable"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	roundTrip(b, c, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	var reqs [][]byte
	for i := range 1024 {
		reqs = append(reqs, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ping"}}}`, i+1))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		roundTrip(b, c, reqs[i%len(reqs)])
		i++
	}
}

// roundTrip posts msg and reads the server's response.
func roundTrip(b *testing.B, c *Conn, msg []byte) {
	if err := c.writeMessage(msg); err != nil {
		b.Fatal(err)
	}
	f, err := c.Read(context.Background())
	if err != nil || !bytes.Contains(f.Head, []byte(`"result"`)) {
		b.Fatalf("the response: %s, %v", f.Head, err)
	}
}

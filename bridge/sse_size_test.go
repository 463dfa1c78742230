package bridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// The TypeScript SDK's streamable HTTP server answers over SSE by
// default, one event per message, however large: a 17 MB result is one
// 17 MB event. These tests relay such events through --url, each way,
// against internal/testpeers/npm/blob-http-server.mjs: its blob tool
// returns a text of n bytes, and its digest tool the SHA-256 of the text
// it received. The 64 MB case runs in `go run ./bench sse`.

// sseEventSize is over the 16 MiB one event could hold before.
const sseEventSize = 17_000_000

// blobHTTPServer starts the TypeScript server and returns its MCP
// endpoint.
func blobHTTPServer(t *testing.T) string {
	t.Helper()
	js, _ := filepath.Abs("../internal/testpeers/npm/blob-http-server.mjs")
	if _, err := os.Stat("../internal/testpeers/npm/node_modules/@modelcontextprotocol/sdk"); err != nil {
		testenv.Missing(t, "@modelcontextprotocol/sdk", "run npm ci --prefix internal/testpeers/npm (.ci/run does)")
	}
	return startHTTPPeer(t, t, []string{"node", js}, nil, "listening on").url
}

// sseCall is a tools/call of the blob-http server, with id 2.
func sseCall(tool, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
}

// directSSE makes one call to the server with plain HTTP, after an
// initialize of its own, and returns the data of the event that answers
// it: what the server sends a client that talks to it directly.
func directSSE(t *testing.T, url string, call []byte) []byte {
	t.Helper()
	post := func(sid string, body []byte) *http.Response {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	init := post("", []byte(sizeInit))
	sid := init.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, init.Body)
	io.Copy(io.Discard, post(sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)).Body)
	resp := post(sid, call)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("the server answered with %q; want an event stream", ct)
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the server's event stream ended without an answer: %v", err)
		}
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\n"), []byte("data: ")); ok && len(data) > 0 {
			return data
		}
	}
}

// lineClient is a stdio MCP client of a bridge, line by line.
type lineClient struct {
	t   *testing.T
	w   io.Writer
	out *bufio.Reader
}

// bridgeClient runs a bridge in front of url and returns its stdio client.
func bridgeClient(t *testing.T, url string) *lineClient {
	t.Helper()
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	b, err := New(Options{LogDir: t.TempDir(), URL: url, Client: c2bR, ClientOut: b2cW})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Run(context.Background()); b2cW.Close() }()
	t.Cleanup(func() {
		c2bW.Close()
		if err := <-done; err != nil {
			t.Errorf("the bridge ended with %v", err)
		}
	})
	return &lineClient{t: t, w: c2bW, out: bufio.NewReaderSize(b2cR, 1<<20)}
}

// send writes one message, in the background: a large one is written
// while the bridge relays it. The channel gets the write's error.
func (c *lineClient) send(msg []byte) <-chan error {
	sent := make(chan error, 1)
	go func() { _, err := c.w.Write(append(msg, '\n')); sent <- err }()
	return sent
}

// call sends a request and returns the next line the bridge writes.
func (c *lineClient) call(msg []byte) []byte {
	c.t.Helper()
	sent := c.send(msg)
	got, err := c.out.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("reading from the bridge: %v", err)
	}
	if err := <-sent; err != nil {
		c.t.Fatal(err)
	}
	return got[:len(got)-1]
}

// TestLargeSSEEventsThroughURL relays a 17 MB SSE event each way between
// a stdio client and a TypeScript SDK server fronted with --url: the
// server's answer reaches the client byte for byte as the server sends it
// to a direct client, and the server receives the client's 17 MB
// argument byte for byte (its SHA-256 of it is the client's).
func TestLargeSSEEventsThroughURL(t *testing.T) {
	t.Parallel()
	url := blobHTTPServer(t)
	call := sseCall("blob", fmt.Sprintf(`{"bytes":%d}`, sseEventSize))
	want := directSSE(t, url, call)
	if len(want) < sseEventSize {
		t.Fatalf("the server's direct answer is %d bytes; want over %d", len(want), sseEventSize)
	}
	c := bridgeClient(t, url)
	if got := c.call([]byte(sizeInit)); !bytes.Contains(got, []byte(`"name":"blob-http"`)) {
		t.Fatalf("initialize: got %.300s", got)
	}
	if err := <-c.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}

	if got := c.call(call); !bytes.Equal(got, want) {
		t.Fatalf("server to client: the client got %d bytes that differ from the %d the server sends a direct client; they begin %.300q", len(got), len(want), got)
	}

	data := sizeBlob(sseEventSize)
	sum := sha256.Sum256(data)
	got := c.call(sseCall("digest", `{"data":"`+string(data)+`"}`))
	wantText := fmt.Sprintf(`"text":"%s %d"`, hex.EncodeToString(sum[:]), len(data))
	if !bytes.Contains(got, []byte(wantText)) || !bytes.Contains(got, []byte(`"id":2`)) {
		t.Fatalf("client to server: got %.300s; want the server to report %s", got, wantText)
	}
}

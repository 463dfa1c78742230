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
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// The size tests relay a tools/call carrying n bytes and a result carrying
// n bytes through a real bridge, over stdio and over streamable HTTP, and
// compare every byte: the server answers with the SHA-256 of the request
// it received, and the client compares the result line with the one the
// server built. The members come in mcp-go's order: the method after the
// params.

// sizeBlob is n bytes of JSON string content that needs no escaping.
func sizeBlob(n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[(i*7+i/64)%len(alphabet)]
	}
	return b
}

func bigCall(n int) []byte {
	return append(append([]byte(`{"jsonrpc":"2.0","id":41,"params":{"name":"store","arguments":{"file":"`), sizeBlob(n)...), `"}},"method":"tools/call"}`...)
}

// bigResult is the server's answer to a received request line.
func bigResult(n int, received []byte) []byte {
	sum := sha256.Sum256(received)
	return append(append([]byte(`{"jsonrpc":"2.0","result":{"received":"`+hex.EncodeToString(sum[:])+`","content":[{"type":"text","text":"`), sizeBlob(n)...), `"}]},"id":41}`...)
}

const sizeInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func initResult(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`
}

// rawServerEnv makes the test binary a raw stdio MCP server whose results
// carry the env value's number of bytes.
const rawServerEnv = "AEP_TEST_RAW_SERVER"

func rawStdioServer(size string) int {
	n, _ := strconv.Atoi(size)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case bytes.Contains(line, []byte(`"method":"initialize"`)):
			out.WriteString(initResult("1") + "\n")
		case bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":41,`)):
			out.Write(append(bigResult(n, line), '\n'))
		}
		out.Flush()
	}
}

// rawHTTPServer is the same server over streamable HTTP (JSON responses).
func rawHTTPServer(t *testing.T, n int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading a POST: %v", err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case bytes.Contains(body, []byte(`"method":"initialize"`)):
			w.Header().Set("Mcp-Session-Id", "s1")
			io.WriteString(w, initResult("1"))
		case bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","id":41,`)):
			w.Write(bigResult(n, body))
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLargeMessagesThroughTheBridge relays the large sizes each way
// over stdio and over HTTP.
func TestLargeMessagesThroughTheBridge(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range testenv.LargeSizes(t) {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(fmt.Sprintf("%s %d bytes", transport, n), func(t *testing.T) {
				o := Options{LogDir: t.TempDir(), Env: append(os.Environ(), rawServerEnv+"="+strconv.Itoa(n)), Command: []string{self}}
				if transport == "http" {
					o = Options{LogDir: t.TempDir(), URL: rawHTTPServer(t, n)}
				}
				relayLarge(t, o, n)
			})
		}
	}
}

func relayLarge(t *testing.T, o Options, n int) {
	t.Helper()
	c2bR, c2bW := io.Pipe()
	b2cR, b2cW := io.Pipe()
	o.Client, o.ClientOut = c2bR, b2cW
	o.StopGrace, o.KillTimeout = 2e9, 2e9
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Run(context.Background()); b2cW.Close() }()
	out := bufio.NewReaderSize(b2cR, 1<<20)
	line := func() []byte {
		t.Helper()
		l, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading from the bridge: %v", err)
		}
		return l[:len(l)-1]
	}
	write := func(b []byte) <-chan error {
		ch := make(chan error, 1)
		go func() { _, err := c2bW.Write(append(b, '\n')); ch <- err }()
		return ch
	}
	write([]byte(sizeInit))
	if got := string(line()); !strings.Contains(got, `"serverInfo":{"name":"raw"`) {
		t.Fatalf("initialize: got %.300s", got)
	}
	write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	call := bigCall(n)
	sent := write(call)
	got := line()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if want := bigResult(n, call); !bytes.Equal(got, want) {
		if i := bytes.Index(got, []byte(`"received":"`)); i >= 0 && !bytes.Equal(got[i:i+80], want[i:i+80]) {
			t.Fatalf("the server received a request that differs from the %d bytes sent (its SHA-256 differs)", len(call))
		}
		t.Fatalf("the client got %d bytes that differ from the %d bytes the server sent", len(got), len(want))
	}
	c2bW.Close()
	if err := <-done; err != nil {
		t.Fatalf("the bridge ended with %v", err)
	}
}

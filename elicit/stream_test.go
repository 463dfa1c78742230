package elicit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// pipePeers is a proxy between two real newline-framed streams, as over
// stdio: the test writes what each peer sends and reads what each gets.
type pipePeers struct {
	p                  *Proxy
	toClient, toServer *bufio.Reader // what the proxy wrote to each peer
	fromClient         io.Writer     // what the client sends
	fromServer         io.Writer     // what the server sends
}

func startPipeProxy(t *testing.T) *pipePeers {
	t.Helper()
	cr, cw := io.Pipe() // client → proxy
	pr, pw := io.Pipe() // proxy → client
	sr, sw := io.Pipe() // server → proxy
	qr, qw := io.Pipe() // proxy → server
	client := NewStreamConn(cr, pw, func() error { cr.Close(); return pw.Close() }, 0)
	server := NewStreamConn(sr, qw, func() error { sr.Close(); return qw.Close() }, 0)
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
	p := New(Options{Client: client, Server: server, Manager: mgr})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		cw.Close()
		sw.Close()
		<-done
		p.Close()
		mgr.Close()
	})
	return &pipePeers{p: p, toClient: bufio.NewReaderSize(pr, 1<<20), toServer: bufio.NewReaderSize(qr, 1<<20), fromClient: cw, fromServer: sw}
}

// send writes msg and its newline from a goroutine (a large message fills
// the pipe before the reader starts); the returned channel gives the
// write's error.
func send(w io.Writer, msg []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(append(msg, '\n'))
		done <- err
	}()
	return done
}

// readLine returns the next line r holds, without its newline.
func readLine(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	b, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading what the proxy wrote: %v", err)
	}
	return b[:len(b)-1]
}

// blob is n bytes of JSON string content that needs no escaping.
func blob(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[(i*7+i/64)%len(alphabet)]
	}
	return string(b)
}

// TestLargeMessagesPassByteExact relays a tools/call and its result of
// each large size both ways over newline-framed streams: the method after
// the params (mcp-go's member order), the id after the result, each
// compared byte for byte; the request is tracked while it is in flight.
func TestLargeMessagesPassByteExact(t *testing.T) {
	for _, n := range testenv.LargeSizes(t) {
		t.Run(fmt.Sprintf("%d bytes", n), func(t *testing.T) {
			pp := startPipeProxy(t)
			data := blob(n)
			req := []byte(`{"jsonrpc":"2.0","id":41,"params":{"name":"store","arguments":{"file":"` + data + `"}},"method":"tools/call"}`)
			sent := send(pp.fromClient, req)
			if got := readLine(t, pp.toServer); !bytes.Equal(got, req) {
				t.Fatalf("the server got %d bytes that differ from the %d the client sent", len(got), len(req))
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if got := pp.p.Inflight(); got != 1 {
				t.Errorf("in flight after the request: got %d; want 1", got)
			}
			res := []byte(`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + data + `"}]},"id":41}`)
			sent = send(pp.fromServer, res)
			if got := readLine(t, pp.toClient); !bytes.Equal(got, res) {
				t.Fatalf("the client got %d bytes that differ from the %d the server sent", len(got), len(res))
			}
			<-sent
			// A small message after the large one is framed apart.
			ping := []byte(`{"jsonrpc":"2.0","id":42,"method":"ping"}`)
			send(pp.fromClient, ping)
			if got := readLine(t, pp.toServer); !bytes.Equal(got, ping) {
				t.Fatalf("after the large message the server got %q; want %s", got, ping)
			}
			if got := pp.p.Inflight(); got != 1 {
				t.Errorf("in flight after the result and a ping: got %d; want 1 (the ping)", got)
			}
		})
	}
}

// TestLargeModernRequestDeclaresElicitation: a 2026-07-28 request too
// large to read whole still gets elicitation declared in its _meta, which
// comes after the large arguments, and nothing else changes.
func TestLargeModernRequestDeclaresElicitation(t *testing.T) {
	pp := startPipeProxy(t)
	data := blob(5 << 20)
	pre := `{"jsonrpc":"2.0","id":"m-1","params":{"name":"store","arguments":{"file":"` + data + `"},"_meta":`
	post := `},"method":"tools/call"}`
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p1"}`
	want := `{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p1"}`
	send(pp.fromClient, []byte(pre+meta+post))
	got := readLine(t, pp.toServer)
	if !bytes.Equal(got, []byte(pre+want+post)) {
		i := bytes.Index(got, []byte(`"_meta":`))
		t.Fatalf("the server got a request whose _meta reads %.200s; want %s", got[max(i, 0):], want)
	}
}

// TestRefusalsCarryTheID: what the bridge must read whole but cannot is
// answered with an error under the message's own id, read from its
// envelope, never null; a deep message it need not read passes.
func TestRefusalsCarryTheID(t *testing.T) {
	big := blob(5 << 20)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	tests := []struct {
		name       string
		fromServer bool
		msg        string
		wantError  string // the sender gets an error with this id, code and text
		wantPass   bool
	}{
		{name: "a large initialize", msg: `{"jsonrpc":"2.0","id":"i-1","method":"initialize","params":{"x":"` + big + `"}}`,
			wantError: `"id":"i-1","error":{"code":-32600,"message":"Invalid Request: the initialize request is over 4 MiB`},
		{name: "a large elicitation/create", fromServer: true, msg: `{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"message":"` + big + `"}}`,
			wantError: `"id":5,"error":{"code":-32600,"message":"Invalid Request: the elicitation/create request is over 4 MiB`},
		{name: "a deep elicitation/create, id last", fromServer: true, msg: `{"jsonrpc":"2.0","method":"elicitation/create","params":{"requestedSchema":` + deep + `},"id":6}`,
			wantError: `"id":6,"error":{"code":-32600,"message":"Invalid Request: the elicitation/create request is nested 100002 levels deep`},
		{name: "a large message broken in its head", msg: `{"jsonrpc":"2.0","id":8,"method":"tools/call" "params":{"a":"` + big + `"}}`,
			wantError: `"id":8,"error":{"code":-32700,"message":"Parse error: the message is not valid JSON: invalid JSON at byte`},
		{name: "a small message broken after its id", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/call",}`,
			wantError: `"id":9,"error":{"code":-32700,"message":"Parse error: the message is not valid JSON: invalid JSON at byte 46: want a member name`},
		{name: "a large message broken after its head passes as it is", msg: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"a":"` + big + `"} x}`, wantPass: true},
		{name: "a deep tools/call passes", msg: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"arguments":{"x":` + deep + `}}}`, wantPass: true},
		{name: "a deep result passes", fromServer: true, msg: `{"jsonrpc":"2.0","id":11,"result":{"structuredContent":` + deep + `}}`, wantPass: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp := startPipeProxy(t)
			from, back, onward := pp.fromClient, pp.toClient, pp.toServer
			if tt.fromServer {
				from, back, onward = pp.fromServer, pp.toServer, pp.toClient
			}
			send(from, []byte(tt.msg))
			if tt.wantPass {
				if got := readLine(t, onward); string(got) != tt.msg {
					t.Fatalf("the message changed on its way (%d bytes; sent %d)", len(got), len(tt.msg))
				}
				return
			}
			got := readLine(t, back)
			if !json.Valid(got) || !strings.Contains(string(got), tt.wantError) {
				t.Fatalf("the sender got %s; want an error containing %s", got, tt.wantError)
			}
		})
	}
}

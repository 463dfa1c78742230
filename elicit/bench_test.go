package elicit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// discardConn is a Conn for benchmarks: writes go nowhere, reads never
// return (the benchmarks call the proxy's relay directly).
type discardConn struct{ n int }

func (c *discardConn) Read(ctx context.Context) (Frame, error) {
	<-ctx.Done()
	return Frame{}, ctx.Err()
}

func (c *discardConn) Write(_ context.Context, f Frame) error {
	if f.Rest != nil {
		io.Copy(io.Discard, f.Rest)
	}
	c.n++
	return nil
}

func (c *discardConn) Close() error { return nil }

// benchProxy is a Proxy between two discardConns whose client has
// initialized, as in a running session.
func benchProxy(b *testing.B) *Proxy {
	b.Helper()
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
	b.Cleanup(func() { mgr.Close() })
	p := New(Options{Client: &discardConn{}, Server: &discardConn{}, Manager: mgr})
	p.fromClient([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	p.fromServer([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`))
	return p
}

// callFrames are n tools/call requests with distinct ids, as a client
// sends them, and the server's responses.
func callFrames(n int, result string) (reqs, resps []Frame) {
	for i := range n {
		reqs = append(reqs, Frame{Head: []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ping"}}}`, i+1))})
		resps = append(resps, Frame{Head: []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, i+1, result))})
	}
	return reqs, resps
}

// BenchmarkRelayRoundTrip measures the proxy's own work for one tools/call
// and its response (envelope reads, tracking, the writes handed to the
// Conns), with ids that differ as a client's do.
func BenchmarkRelayRoundTrip(b *testing.B) {
	benchRoundTrips(b, `{"content":[{"type":"text","text":"ping"}]}`)
}

// benchRoundTrips relays tools/call requests and their responses with
// result, ids cycling over 1024.
func benchRoundTrips(b *testing.B, result string) {
	p := benchProxy(b)
	reqs, resps := callFrames(1024, result)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p.relay(p.ctx, reqs[i%len(reqs)], true)
		p.relay(p.ctx, resps[i%len(resps)], false)
		i++
	}
	if got := p.client.(*discardConn).n; got < i {
		b.Fatalf("the client got %d responses to %d requests; the benchmark measured something else", got, i)
	}
}

// BenchmarkRelayRoundTripSameID is BenchmarkRelayRoundTrip for a client
// that uses one id for every request, each after the last one's response.
func BenchmarkRelayRoundTripSameID(b *testing.B) {
	p := benchProxy(b)
	reqs, resps := callFrames(1, `{"content":[{"type":"text","text":"ping"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		p.relay(p.ctx, reqs[0], true)
		p.relay(p.ctx, resps[0], false)
	}
}

// BenchmarkRelayNotification measures a message the proxy does not act
// on: a server's log notification, passed through.
func BenchmarkRelayNotification(b *testing.B) {
	p := benchProxy(b)
	f := Frame{Head: []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"x","data":"a line of the server's log"}}`)}
	b.ReportAllocs()
	for b.Loop() {
		p.relay(p.ctx, f, false)
	}
}

// BenchmarkRelayLargeResult measures the response to a tools/call whose
// result is a large text read whole (under the 4 MiB streaming limit): the
// proxy reads its envelope, not its body.
// largeResult is a tools/call result of about size bytes as servers
// write them: escaped text, and structured rows of strings and numbers.
func largeResult(size int) string {
	var text, rows strings.Builder
	for i := 0; text.Len() < size/2; i++ {
		fmt.Fprintf(&text, `line %d of the report: \"quoted\", a tab\t and caf\u00e9 \u2014 done.\n`, i)
	}
	for i := 0; rows.Len() < size/2; i++ {
		if i > 0 {
			rows.WriteByte(',')
		}
		fmt.Fprintf(&rows, `{"id":%d,"name":"item-%d","score":%d.25,"tags":["a","b"],"ok":true,"note":null}`, i, i, i%100)
	}
	return `{"content":[{"type":"text","text":"` + text.String() + `"}],"structuredContent":{"rows":[` + rows.String() + `]}}`
}

func BenchmarkRelayLargeResult(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			benchRoundTrips(b, largeResult(size))
		})
	}
}

// BenchmarkStreamConnRelay measures a newline-framed stream's side of a
// pass-through: reading a message from the stdio framing and writing it
// to the other peer's.
func BenchmarkStreamConnRelay(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"x","data":"a line of the server's log"}}` + "\n")
	in := bytes.Repeat(msg, 4096)
	r := bytes.NewReader(in)
	src := NewStreamConn(r, io.Discard, nil, 0)
	dst := NewStreamConn(strings.NewReader(""), io.Discard, nil, 0)
	ctx := context.Background()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := src.Read(ctx)
		if err == io.EOF {
			r.Reset(in)
			src = NewStreamConn(r, io.Discard, nil, 0)
			f, err = src.Read(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := dst.Write(ctx, Frame{Head: f.Head, More: f.More}); err != nil {
			b.Fatal(err)
		}
	}
}

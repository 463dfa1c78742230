package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// runSSE times one large message each way between a client and a
// TypeScript SDK streamable-HTTP server, which answers over SSE (one
// event per message, however large), two ways in paired rounds: a direct
// plain-HTTP client, and a stdio client through the bridge fronting the
// server with --url. It prints the time of each call, the bridge's peak
// RSS above its RSS once initialized, and whether the bytes were exact:
// the result the client gets through the bridge is compared with the one
// the server sends the direct client, and the server reports the SHA-256
// of the argument it received.
func runSSE(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sse", flag.ContinueOnError)
	size := fs.Int("size", 64_000_000, "bytes of the result text and of the argument")
	rounds := fs.Int("rounds", 3, "paired rounds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	script, err := filepath.Abs("internal/testpeers/npm/blob-http-server.mjs")
	if err != nil {
		return err
	}
	if _, ok := nodePeers(); !ok {
		return errors.New("the TypeScript SDK server needs node and the npm test peers: run npm ci --prefix internal/testpeers/npm")
	}
	bridgeBin, _, _, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	url, stop, err := startBlobServer(ctx, script)
	if err != nil {
		return err
	}
	defer stop()
	logs, _ := os.MkdirTemp("", "aep-bench-logs")
	defer os.RemoveAll(logs)
	bridgeArgv := []string{bridgeBin, "--url", url, "--listen", "off", "--log-dir", logs, "--log-level", "error"}

	data := benchBlob(*size)
	dataSum := sha256.Sum256(data)
	// fromServer: the result is compared with the one the server sends
	// the direct client; otherwise the server's digest of the argument
	// must be the bench's.
	directions := []struct {
		name       string
		call       []byte
		fromServer bool
	}{
		{"server → client (a result of N bytes)", sseBenchCall("blob", fmt.Sprintf(`{"bytes":%d}`, *size)), true},
		{"client → server (an argument of N bytes)", sseBenchCall("digest", `{"data":"`+string(data)+`"}`), false},
	}
	digest := fmt.Sprintf(`"text":"%s %d"`, hex.EncodeToString(dataSum[:]), len(data))
	type key struct{ dir, path string }
	times := map[key][]time.Duration{}
	peak := map[string]int64{}
	exact := map[key]bool{}
	ratios := map[string][]float64{}
	for r := 0; r < *rounds; r++ {
		for _, d := range directions {
			direct, err := directSSECall(ctx, url, d.call)
			if err != nil {
				return fmt.Errorf("%s, direct: %w", d.name, err)
			}
			bridged, grew, err := bridgedCall(bridgeArgv, d.call)
			if err != nil {
				return fmt.Errorf("%s, bridge: %w", d.name, err)
			}
			for _, p := range []struct {
				path string
				res  callResult
			}{{"direct", direct}, {"bridge (--url)", bridged}} {
				k := key{d.name, p.path}
				times[k] = append(times[k], p.res.took)
				ok := p.res.contains(digest)
				if d.fromServer {
					ok = bytes.Equal(p.res.sum, direct.sum) && len(direct.head) > 0
				}
				exact[k] = (r == 0 || exact[k]) && ok
			}
			peak[d.name] = max(peak[d.name], grew)
			ratios[d.name] = append(ratios[d.name], float64(bridged.took)/float64(direct.took))
		}
	}
	fmt.Printf("\none %d-byte message each way, TypeScript SDK streamable-HTTP server answering over SSE, %d paired rounds\n\n", *size, *rounds)
	fmt.Println("| direction | path | time ms (median) | vs direct (median of paired ratios) | bridge peak RSS above idle, MB (largest round) | byte-exact |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, d := range directions {
		for _, path := range []string{"direct", "bridge (--url)"} {
			k := key{d.name, path}
			vs, rss := "—", "—"
			if path != "direct" {
				vs = fmt.Sprintf("%.2f×", medianFloat(ratios[d.name]))
				rss = fmt.Sprintf("%.1f", float64(peak[d.name])/(1<<20))
			}
			yes := "yes"
			if !exact[k] {
				yes = "NO"
			}
			fmt.Printf("| %s | %s | %.1f | %s | %s | %s |\n", d.name, path, float64(median(times[k]).Microseconds())/1000, vs, rss, yes)
		}
	}
	return nil
}

// benchBlob is n bytes of JSON string content that needs no escaping.
func benchBlob(n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	return bytes.Repeat([]byte(alphabet), n/len(alphabet)+1)[:n]
}

func sseBenchCall(tool, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
}

const sseBenchInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`

// startBlobServer runs the TypeScript server and returns its endpoint.
func startBlobServer(ctx context.Context, script string) (string, func(), error) {
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	return startListener(cmd, out, io.Discard)
}

// callResult is one timed call: how long it took, and the SHA-256 and
// the start of the answer.
type callResult struct {
	took time.Duration
	sum  []byte
	head []byte
}

// contains reports whether the start of the answer holds s.
func (r callResult) contains(s string) bool { return bytes.Contains(r.head, []byte(s)) }

// hashLine reads one line, without its end, into a SHA-256, keeping its
// first 4 KiB.
func hashLine(r *bufio.Reader, skip []byte) (callResult, error) {
	h := sha256.New()
	var head []byte
	first := true
	for {
		frag, err := r.ReadSlice('\n')
		if first {
			frag, first = bytes.TrimPrefix(frag, skip), false
		}
		end := err == nil
		if end {
			frag = frag[:len(frag)-1]
		}
		if len(head) < 4096 {
			head = append(head, frag[:min(len(frag), 4096-len(head))]...)
		}
		h.Write(frag)
		if end {
			return callResult{sum: h.Sum(nil), head: head}, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return callResult{}, err
		}
	}
}

// directSSECall initializes a session of its own with plain HTTP and
// times one call, from its request to the end of the event that answers
// it.
func directSSECall(ctx context.Context, url string, call []byte) (callResult, error) {
	post := func(sid string, body []byte) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		return http.DefaultClient.Do(req)
	}
	init, err := post("", []byte(sseBenchInit))
	if err != nil {
		return callResult{}, err
	}
	sid := init.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, init.Body)
	init.Body.Close()
	note, err := post(sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return callResult{}, err
	}
	note.Body.Close()
	t0 := time.Now()
	resp, err := post(sid, call)
	if err != nil {
		return callResult{}, err
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		b, err := r.Peek(6)
		if err != nil {
			return callResult{}, fmt.Errorf("the event stream ended without an answer: %w", err)
		}
		if string(b) == "data: " {
			res, err := hashLine(r, []byte("data: "))
			if err != nil {
				return callResult{}, err
			}
			if len(res.head) == 0 {
				continue // a priming event
			}
			res.took = time.Since(t0)
			return res, nil
		}
		if _, err := r.ReadSlice('\n'); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return callResult{}, err
		}
	}
}

// bridgedCall spawns the bridge (argv), initializes it over stdio and
// times one call, from its request to the end of the line that answers
// it; it also returns how far the bridge's peak RSS rose above its RSS
// once initialized.
func bridgedCall(argv []string, call []byte) (callResult, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return callResult{}, 0, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return callResult{}, 0, err
	}
	if err := cmd.Start(); err != nil {
		return callResult{}, 0, err
	}
	defer func() { in.Close(); cmd.Wait() }()
	out := bufio.NewReaderSize(outPipe, 1<<20)
	io.WriteString(in, sseBenchInit+"\n")
	if _, err := hashLine(out, nil); err != nil {
		return callResult{}, 0, fmt.Errorf("initialize: %w", err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	idle, err := procStatus(cmd.Process.Pid, "VmRSS")
	if err != nil {
		return callResult{}, 0, err
	}
	t0 := time.Now()
	wrote := make(chan error, 1)
	go func() { _, err := in.Write(append(call, '\n')); wrote <- err }()
	res, err := hashLine(out, nil)
	res.took = time.Since(t0)
	if err != nil {
		return callResult{}, 0, err
	}
	if err := <-wrote; err != nil {
		return callResult{}, 0, err
	}
	peak, err := procStatus(cmd.Process.Pid, "VmHWM")
	return res, peak - idle, err
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/squatter"
)

// boundAddr waits until the bridge says where a listener it bound on
// port 0 is, after prefix ("AEP endpoint on http://", "MCP gateway on
// http://"), and returns that host:port.
func (l *lockedBuffer) boundAddr(t *testing.T, prefix string) string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(prefix) + `([^\s/]+)[\s/]`)
	l.waitFor(t, prefix)
	for {
		ch := l.Changed()
		if m := re.FindStringSubmatch(l.String()); m != nil {
			return m[1]
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("the bridge never finished saying %q:\n%s", prefix, l.String())
		}
	}
}

// runInProcess runs the command line in-process with a pipe for stdin.
func runInProcess(t *testing.T, args ...string) (stdin io.WriteCloser, stderr *lockedBuffer, done <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	stderr = &lockedBuffer{}
	ch := make(chan error, 1)
	go func() { ch <- run(context.Background(), args, pr, io.Discard, stderr) }()
	t.Cleanup(func() {
		pw.Close()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Error("bridge did not stop")
		}
	})
	return pw, stderr, ch
}

// TestSecondBridgeJoinsTheFirstsEndpoint starts bridge B on the port bridge
// A serves: B joins A as an emitter, and B's events appear on A's stream.
func TestSecondBridgeJoinsTheFirstsEndpoint(t *testing.T) {
	state := t.TempDir()
	common := []string{"--token", "shared-token-0123456789abcdefghijklmnop", "--state-dir", state, "--log-dir", "off"}
	_, errA, _ := runInProcess(t, append(common, "--listen", "127.0.0.1:0", "--agent", "bridge-a", "--", "cat")...)
	addr := errA.boundAddr(t, "AEP endpoint on http://")
	common = append(common, "--listen", addr) // B, on the port A serves

	req, _ := http.NewRequest("GET", "http://"+addr+`/stream?filter={"agent":"bridge-b"}`, nil)
	req.Header.Set("Authorization", "Bearer shared-token-0123456789abcdefghijklmnop")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	inB, errB, _ := runInProcess(t, append(common, "--agent", "bridge-b", "--", "cat")...)
	io.WriteString(inB, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n") // starts B's session

	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var ev map[string]any
		json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev)
		if ev["type"] == "session.started" && ev["agent"] == "bridge-b" {
			if !strings.Contains(errB.String(), "joining it as an emitter") {
				t.Errorf("B did not say it joined: %s", errB.String())
			}
			return
		}
	}
	t.Fatalf("B's session never appeared on A's endpoint: %v\nB's stderr: %s", sc.Err(), errB.String())
}

// TestSquatterOnThePortGetsNothing puts a hostile server on --listen's port
// before the bridge starts: the bridge exits with an error naming the port
// and what answered there, and the squatter received neither the token nor
// any event.
func TestSquatterOnThePortGetsNothing(t *testing.T) {
	const token = "squatted-token-0123456789abcdefghijklmnopqrstuvwxyz"
	for _, tc := range []struct {
		name string
		mode squatter.Mode
		what string
	}{
		{name: "answers discovery like an old bridge", mode: squatter.Naive, what: "without the token proof"},
		{name: "claims the token proof", mode: squatter.Mimic, what: "does not know this bridge's token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sq := squatter.Start(t, "127.0.0.1:0", tc.mode)
			var stderr lockedBuffer
			err := run(context.Background(), []string{"--listen", sq.Addr, "--token", token, "--log-dir", "off", "--state-dir", t.TempDir(), "--", "cat"},
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), io.Discard, &stderr)
			if err == nil || !strings.Contains(err.Error(), sq.Addr) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), "--listen") {
				t.Fatalf("got %v; want an error naming %s, saying %q and suggesting --listen", err, sq.Addr, tc.what)
			}
			t.Logf("the bridge said: %v", err)
			got := sq.Received()
			if tc.mode == squatter.Mimic && !bytes.Contains(got, []byte("proof-challenge")) {
				t.Errorf("the squatter never saw the proof's challenge; the test did not reach the proof:\n%s", got)
			}
			for _, secret := range []string{token, "Bearer", "access_token", `"aep":"0.1"`, "session.started", "proof-finish"} {
				if bytes.Contains(got, []byte(secret)) {
					t.Errorf("the squatter received %q:\n%s", secret, got)
				}
			}
		})
	}
}

func TestPortTakenBySomethingElse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.NotFoundHandler())
	var stderr lockedBuffer
	err = run(context.Background(), []string{"--listen", ln.Addr().String(), "--token", "port-taken-token-0123456789abcdefghij", "--log-dir", "off", "--", "cat"},
		strings.NewReader(""), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), `answered "404 Not Found"`) {
		t.Fatalf("got %v; want an error naming the port and the 404 that answered there", err)
	}
}

// TestOperatorCommandsGiveASquatterNothing points pending, respond and tail
// at a hostile server on the endpoint's address: each refuses, and the
// squatter receives neither the token nor a command.
func TestOperatorCommandsGiveASquatterNothing(t *testing.T) {
	const token = "operator-token-0123456789abcdefghijklmnopqrstuvwxyz"
	for _, mode := range []squatter.Mode{squatter.Naive, squatter.Mimic} {
		sq := squatter.Start(t, "127.0.0.1:0", mode)
		base := []string{"--endpoint", "http://" + sq.Addr, "--token", token}
		for _, args := range [][]string{
			append([]string{"pending"}, base...),
			append([]string{"respond", "01J00000000000000000000000", "--decline", "--wait", "2s"}, base...),
			append([]string{"tail"}, base...),
		} {
			_, errOut, code := cli(t, args...)
			if code == 0 {
				t.Errorf("%s against a squatter (mode %d) exited 0; want a refusal", args[0], mode)
			}
			t.Logf("%s said: %s", args[0], strings.TrimSpace(errOut))
		}
		got := sq.Received()
		for _, secret := range []string{token, "Bearer", "access_token", "control.attention.respond", "proof-finish"} {
			if bytes.Contains(got, []byte(secret)) {
				t.Errorf("the squatter (mode %d) received %q", mode, secret)
			}
		}
	}
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// npmDir is where `npm ci --prefix internal/testpeers/npm` installs the
// TypeScript peers.
const npmDir = "../internal/testpeers/npm"

// needNPM returns the absolute path of an installed npm package file, or
// stops the test when it is missing (a failure under CI).
func needNPM(t *testing.T, rel string) string {
	t.Helper()
	p, _ := filepath.Abs(filepath.Join(npmDir, rel))
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, p, "run npm ci --prefix internal/testpeers/npm (.ci/run does)")
	}
	return p
}

// everything is @modelcontextprotocol/server-everything over stdio.
func everything(t *testing.T) []string {
	return []string{"node", needNPM(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
}

// tsConfig configures clients/gateway-client.mjs (see its header).
type tsConfig struct {
	URL       string         `json:"url"`
	Transport string         `json:"transport"`
	Token     string         `json:"token,omitempty"`
	Name      string         `json:"name"`
	Elicit    map[string]any `json:"elicit,omitempty"`
	Calls     []tsCall       `json:"calls,omitempty"`
	Terminate bool           `json:"terminate,omitempty"`
}

type tsCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// tsLine is one step the TypeScript client printed.
type tsLine struct {
	Event     string `json:"event"`
	SessionID string `json:"sessionId"`
	Text      string `json:"text"`
	Message   string `json:"message"`
	IsError   bool   `json:"isError"`
}

// startTS runs the TypeScript SDK client; its lines arrive on the channel,
// which closes when the process exits.
func startTS(t *testing.T, cfg tsConfig) <-chan tsLine {
	t.Helper()
	needNPM(t, "node_modules/@modelcontextprotocol/sdk/package.json")
	script, _ := filepath.Abs(filepath.Join(npmDir, "clients", "gateway-client.mjs"))
	b, _ := json.Marshal(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	cmd := exec.CommandContext(ctx, "node", script, string(b))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		testenv.Missing(t, "node", "install Node.js 20")
	}
	lines := make(chan tsLine, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l tsLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				lines <- l
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("TypeScript client stderr:\n%s", stderr.String())
		}
	})
	return lines
}

// next returns the client's next line, failing on an error line or exit.
func next(t *testing.T, lines <-chan tsLine, want string) tsLine {
	t.Helper()
	l, ok := <-lines
	if !ok {
		t.Fatalf("the TypeScript client exited before %q", want)
	}
	if l.Event != want {
		t.Fatalf("TypeScript client: got %+v; want event %q", l, want)
	}
	return l
}

// TestTypeScriptStreamableClientRacesOperators: under --route both a
// TypeScript client that declares elicitation gets the question and
// answers it first; the operators saw it, and the bus records the
// client's win.
func TestTypeScriptStreamableClientRacesOperators(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteBoth)})
	w := g.watch()
	lines := startTS(t, tsConfig{URL: g.mcpURL, Transport: "streamable", Token: mcpToken, Name: "ts-streamable",
		Elicit: map[string]any{"action": "accept", "content": map[string]any{"environment": "production", "confirm": true}},
		Calls:  []tsCall{{Tool: "ask", Args: map[string]any{"message": "Ship it from TypeScript?"}}}, Terminate: true})
	if l := next(t, lines, "connected"); l.SessionID == "" {
		t.Error("the client got no Mcp-Session-Id")
	}
	next(t, lines, "elicited")
	res := next(t, lines, "result")
	if !strings.Contains(res.Text, `"action":"accept"`) || !strings.Contains(res.Text, `"production"`) {
		t.Errorf("the server received %s; want the client's accept", res.Text)
	}
	next(t, lines, "terminated")
	q := w.question(t, "Ship it from TypeScript?")
	w.waitFor(t, "the question resolved and the session ended", func(w *watcher) bool {
		return w.resolved[q.ID] != "" && w.ended[q.Session] != ""
	})
	if got := w.sessionOf(t, "ts-streamable"); got != q.Session {
		t.Errorf("the question is in session %s; ts-streamable's is %s", q.Session, got)
	}
}

// TestTypeScriptSSEClient: the 2024-11-05 HTTP+SSE transport, with the
// TypeScript SDK's SSEClientTransport; an operator answers.
func TestTypeScriptSSEClient(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote)})
	w := g.watch()
	lines := startTS(t, tsConfig{URL: g.base + "/sse", Transport: "sse", Token: mcpToken, Name: "ts-sse",
		Calls: []tsCall{{Tool: "echo", Args: map[string]any{"message": "over http+sse"}}, {Tool: "ask", Args: map[string]any{"message": "Answer over HTTP+SSE?"}}}})
	next(t, lines, "connected")
	if res := next(t, lines, "result"); res.Text != "over http+sse" {
		t.Errorf("echo: got %q; want %q", res.Text, "over http+sse")
	}
	q := w.question(t, "Answer over HTTP+SSE?")
	g.answer(t, q, aep.Answer{Option: "decline"})
	if res := next(t, lines, "result"); !strings.Contains(res.Text, `"action":"decline"`) {
		t.Errorf("the server received %s; want decline", res.Text)
	}
	next(t, lines, "closed")
	w.waitFor(t, "the session to end with its stream", func(w *watcher) bool { return w.ended[q.Session] != "" })
	if got := w.sessionOf(t, "ts-sse"); got != q.Session {
		t.Errorf("the question is in session %s; ts-sse's is %s", q.Session, got)
	}
}

// TestTypeScriptClientToServerEverything: server-everything as the
// upstream, the TypeScript streamable client calling its echo tool.
func TestTypeScriptClientToServerEverything(t *testing.T) {
	g := startGateway(t, Options{Session: bridgeCommand(everything(t))})
	lines := startTS(t, tsConfig{URL: g.mcpURL, Transport: "streamable", Token: mcpToken, Name: "ts-everything",
		Calls: []tsCall{{Tool: "echo", Args: map[string]any{"message": "through the gateway"}}}, Terminate: true})
	next(t, lines, "connected")
	if res := next(t, lines, "result"); !strings.Contains(res.Text, "through the gateway") {
		t.Errorf("echo: got %q; want it to contain %q", res.Text, "through the gateway")
	}
	next(t, lines, "terminated")
}

package mcpconformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testpeers/record"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// operatorValues are what the operator answers, by field id: every field
// of the suite's elicitation scenarios, each different from the
// field's default and from what the suite's own client would answer, so
// the server's result shows whose answer it got.
var operatorValues = map[string]any{
	"username":       "operator-ada", // tools-call-elicitation
	"name":           "Operator Ada", // the SEP-1034 defaults scenarios
	"age":            41,
	"score":          77.25,
	"status":         "pending",
	"verified":       false,
	"untitledSingle": "option2", // elicitation-sep1330-enums
	"titledSingle":   "value3",
	"legacyEnum":     "opt1",
	"untitledMulti":  []string{"option1", "option3"},
	"titledMulti":    []string{"value2"},
}

// answered is one question the operator answered.
type answered struct {
	id     string
	fields []string
	err    error // what went wrong answering it
}

// operate answers every question the endpoint has or gets, as an
// operator would: it watches the endpoint's attention.requested events
// from the start of its history (operator package), and answers each
// with the real `aep-mcp-bridge respond ID --values …` command, taking
// the token from the bridge's state folder. It stops when the test ends.
func operate(t *testing.T, endpoint, state string) <-chan answered {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		t.Fatalf("the bridge's token: %v", err)
	}
	bridge := peers(t).bridge
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan answered, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(func() { cancel(); wg.Wait() })
	go func() {
		defer wg.Done()
		c := &operator.Client{Endpoint: endpoint, Token: strings.TrimSpace(string(tok)), Agent: "conformance-operator"}
		c.Stream(ctx, operator.StreamOptions{Filter: json.RawMessage(`{"type":["attention.requested"]}`), From: json.RawMessage(`"all"`)},
			func(ev *aep.Event, _ []byte) bool {
				a := answer(ctx, bridge, endpoint, state, ev)
				select {
				case out <- a:
				case <-ctx.Done():
				}
				return ctx.Err() == nil
			})
	}()
	return out
}

// answer responds to one question with operatorValues for its fields.
func answer(ctx context.Context, bridge, endpoint, state string, ev *aep.Event) answered {
	a := answered{id: ev.ID}
	var q aep.AttentionRequested
	if err := json.Unmarshal(ev.Data, &q); err != nil {
		a.err = fmt.Errorf("reading question %s: %w", ev.ID, err)
		return a
	}
	values := map[string]any{}
	for _, f := range q.Fields {
		a.fields = append(a.fields, f.ID)
		v, ok := operatorValues[f.ID]
		if !ok {
			a.err = fmt.Errorf("question %s has a field %q the operator has no value for", ev.ID, f.ID)
			return a
		}
		values[f.ID] = v
	}
	b, _ := json.Marshal(values)
	cmd := exec.CommandContext(ctx, bridge, "respond", ev.ID, "--values", string(b), "--endpoint", endpoint, "--state-dir", state)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "accepted") {
		a.err = fmt.Errorf("respond %s --values %s: %v: %s", ev.ID, b, err, out)
	}
	return a
}

// tap is a reverse proxy in front of an MCP endpoint that keeps the
// bodies that pass each way, so a test sees what the server read and
// what the client got.
type tap struct {
	url string
	// mu guards the fields below.
	mu        sync.Mutex
	requests  [][]byte
	responses bytes.Buffer
}

func newTap(t *testing.T, target string) *tap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.URL.Path = u.Path
			if r.In.Method == http.MethodPost {
				b, _ := io.ReadAll(r.In.Body)
				tp.mu.Lock()
				tp.requests = append(tp.requests, b)
				tp.mu.Unlock()
				r.Out.Body, r.Out.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			}
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // a client that hangs up mid-stream is not news
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &teeBody{ReadCloser: resp.Body, tap: tp}
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	tp.url = srv.URL + u.Path
	return tp
}

// received is what the server read: each POST body.
func (tp *tap) received() [][]byte {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.requests)
}

// sent is what the client got: every response body, end to end.
func (tp *tap) sent() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.responses.String()
}

type teeBody struct {
	io.ReadCloser
	tap *tap
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.tap.mu.Lock()
	b.tap.responses.Write(p[:n])
	b.tap.mu.Unlock()
	return n, err
}

// acceptedContent finds, among the messages a server read, the
// ElicitResult that accepted, and returns its content by field.
func acceptedContent(msgs [][]byte) (map[string]json.RawMessage, bool) {
	for _, m := range msgs {
		var r struct {
			Result struct {
				Action  string                     `json:"action"`
				Content map[string]json.RawMessage `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal(bytes.TrimSpace(m), &r) == nil && r.Result.Action == "accept" {
			return r.Result.Content, true
		}
	}
	return nil, false
}

// toolText is the first text of the last tools/call result the client
// got, as go-sdk's everything-server words it.
func toolText(sent string) string {
	i := strings.LastIndex(sent, `"text":"`)
	if i < 0 {
		return ""
	}
	var s string
	json.NewDecoder(strings.NewReader(sent[i+len(`"text":`):])).Decode(&s)
	return s
}

// remoteServerScenarios are the server scenarios that elicit, with the
// fields their question has.
var remoteServerScenarios = map[string][]string{
	"tools-call-elicitation":       {"username"},
	"elicitation-sep1034-defaults": {"name", "age", "score", "status", "verified"},
	"elicitation-sep1330-enums":    {"untitledSingle", "titledSingle", "legacyEnum", "untitledMulti", "titledMulti"},
}

// TestElicitationAnsweredByAnOperator runs the suite's elicitation
// scenarios with --route remote: the MCP client is never asked; an
// operator answers through `respond`, and the server gets the operator's
// values. For the server scenarios (go-sdk's everything-server asks, the
// suite is the client) the server's tool result, as the client received
// it, carries the values; the suite's own checks of what its client was
// asked do not apply, since under --route remote its client is never
// asked. For the client scenario (the suite's server asks, go-sdk's
// everything-client is the client) the suite's server records the
// values it received, and its checks pass.
func TestElicitationAnsweredByAnOperator(t *testing.T) {
	t.Parallel()
	node(t)
	var rows []func() string // written once every run is over
	var mu sync.Mutex
	row := func(f func() string) {
		mu.Lock()
		rows = append(rows, f)
		mu.Unlock()
	}
	direct := map[string]string{} // scenario → the server's result with the suite's client answering
	t.Run("runs", func(t *testing.T) {
		for s := range remoteServerScenarios {
			t.Run("server/direct/"+s, func(t *testing.T) {
				t.Parallel()
				slot(t)
				tp := newTap(t, referenceServer(t, false))
				runSuite(withDeadline(t, 2), t, "0.1", nil, "server", "--url", tp.url, "--scenario", s)
				mu.Lock()
				direct[s] = toolText(tp.sent())
				mu.Unlock()
			})
		}
		for _, via := range []string{"serve -- CMD", "serve --url"} {
			for _, s := range slices.Sorted(maps.Keys(remoteServerScenarios)) {
				t.Run("server/"+via+"/"+s, func(t *testing.T) {
					t.Parallel()
					slot(t)
					st := newSetup(t)
					readFile := filepath.Join(t.TempDir(), "server-read")
					upstream := []string{"--", peers(t).server}
					var upTap *tap
					if via == "serve --url" {
						upTap = newTap(t, referenceServer(t, false))
						upstream = []string{"--url", upTap.url}
					} else {
						st.env = []string{record.Env + "=" + readFile}
					}
					gw := serveBridge(t, st, "remote", upstream...)
					tp := newTap(t, gw.url)
					answers := operate(t, gw.endpoint, gw.state)
					_, out, _, _ := runSuite(withDeadline(t, 2), t, "0.1", nil, "server", "--url", tp.url, "--scenario", s)
					a := oneAnswer(t, answers, remoteServerScenarios[s], out)
					var read [][]byte
					if upTap != nil {
						read = upTap.received()
					} else {
						b, err := os.ReadFile(readFile)
						if err != nil {
							t.Fatalf("what the server read: %v", err)
						}
						read = bytes.Split(b, []byte("\n"))
					}
					content, ok := acceptedContent(read)
					if !ok {
						t.Fatalf("the server read no accepted ElicitResult; the client got:\n%s", tail(tp.sent()))
					}
					got := checkValues(t, content, a.fields)
					if !t.Failed() {
						res := toolText(tp.sent())
						row(func() string {
							return fmt.Sprintf("| %s (server) | %s, remote | answered with `respond`; the server read %s; its result: %q (directly, with the suite's client answering: %q) |",
								s, via, strings.Join(got, ", "), res, direct[s])
						})
					}
				})
			}
		}
		const s = "elicitation-sep1034-client-defaults"
		for _, via := range []string{"--url (stdio)", "serve --url"} {
			t.Run("client/"+via, func(t *testing.T) {
				t.Parallel()
				slot(t)
				hub := serveBridge(t, newSetup(t), "remote", "--", "cat") // an endpoint for the bridges to join; no MCP client starts its cat
				answers := operate(t, hub.endpoint, hub.state)
				joined := setup{listen: strings.TrimPrefix(hub.endpoint, "http://"), state: hub.state}
				cmd, env, _ := clientPath(t, path{via: via, route: "remote"}, joined)
				code, out, recorded, _ := runSuite(withDeadline(t, 2), t, "0.1", env, "client", "--command", cmd, "--scenario", s)
				r := result{checks: recorded[s].checks, clientExit: code, log: out + recorded[s].output}
				a := oneAnswer(t, answers, []string{"name", "age", "score", "status", "verified"}, out)
				if v := r.verdict(); v != pass {
					t.Errorf("the suite's verdict: %s: %s\n%s", v, strings.Join(r.problems(), "; "), tail(out))
				}
				content := map[string]json.RawMessage{}
				for _, c := range r.checks {
					var d struct {
						Field    string          `json:"field"`
						Received json.RawMessage `json:"receivedValue"`
					}
					if json.Unmarshal(c.Details, &d) == nil && d.Field != "" {
						content[d.Field] = d.Received
					}
				}
				got := checkValues(t, content, a.fields)
				if !t.Failed() {
					row(func() string {
						return fmt.Sprintf("| %s (client) | %s, remote | answered with `respond`; the suite's server received %s; its checks pass |", s, via, strings.Join(got, ", "))
					})
				}
			})
		}
	})
	var lines []string
	for _, f := range rows {
		lines = append(lines, f())
	}
	slices.Sort(lines)
	t.Logf("elicitation answered by an operator (--route remote):\n\n| scenario | path | result |\n|---|---|---|\n%s", strings.Join(lines, "\n"))
}

// checkValues compares what a server received, by field, with what the
// operator answered, and returns the fields as field=value.
func checkValues(t *testing.T, content map[string]json.RawMessage, fields []string) []string {
	t.Helper()
	var got []string
	for _, f := range slices.Sorted(slices.Values(fields)) {
		want, _ := json.Marshal(operatorValues[f])
		if string(content[f]) != string(want) {
			t.Errorf("the server received %s = %s; the operator answered %s", f, content[f], want)
		}
		got = append(got, f+"="+string(content[f]))
	}
	if len(content) != len(fields) {
		t.Errorf("the server received %d values (%v); the operator answered %d", len(content), slices.Sorted(maps.Keys(content)), len(fields))
	}
	return got
}

// oneAnswer waits for the operator's answer to the run's one question,
// which must have fields. The suite has finished by then: the answer came,
// and only the respond command's exit may still be on its way.
func oneAnswer(t *testing.T, answers <-chan answered, fields []string, suiteOut string) answered {
	t.Helper()
	select {
	case a := <-answers:
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !slices.Equal(slices.Sorted(slices.Values(a.fields)), slices.Sorted(slices.Values(fields))) {
			t.Errorf("the question had fields %v; want %v", a.fields, fields)
		}
		select {
		case b := <-answers:
			t.Errorf("a second question %s (fields %v) was asked", b.id, b.fields)
		default:
		}
		return a
	case <-time.After(waitLimit):
		t.Fatalf("no question reached the operator; the suite said:\n%s", tail(suiteOut))
		return answered{}
	}
}

package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// The interoperability matrix: every server peer × transport × protocol
// era × outcome, each cell a whole session through the bridge with a
// go-sdk client that cannot elicit (so operators answer). Each cell
// checks:
//   - the negotiated protocol version equals what the same client and
//     server negotiate with no bridge between them;
//   - the question's subject (the server's own name) and its fields;
//   - the exact bytes of the ElicitResult the server received.
//
// A cell a peer cannot do is named in the table with the reason, and the
// test checks that limitation instead.

// eras are the protocol revisions the client asks for.
var eras = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// outcomes are what the operator does.
var outcomes = []string{"accept", "decline", "cancel", "timeout", "invalid-then-valid"}

// commonSchema is what the Go peers ask for in the matrix.
const commonSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Name","minLength":2},"n":{"type":"integer","title":"Count","minimum":1,"maximum":10}},"required":["name","n"]}`

// matrixPeer is one server peer on one transport.
type matrixPeer struct {
	name    string
	subject string
	// tool is called to make the server ask; "" when the server asks by
	// itself once the session is open.
	tool string
	args map[string]any
	// kind is the question's kind, "form" when empty; a form has fields
	// and is answered with valid, an auth question with acceptAnswer.
	kind         string
	fields       []string
	valid        map[string]any
	acceptAnswer string
	invalid      map[string]any
	// invalidRule is part of the rejection detail of invalid.
	invalidRule string
	// accept is the exact ElicitResult the server receives for valid.
	accept string
	// callError, when set, is the JSON-RPC error code the call ends with
	// (-32042: the server asks by URLElicitationRequiredError, and no
	// ElicitResult ever reaches it; the out-of-band flow completes).
	callError int64
	// launch prepares a cell: the bridge's upstream options, and what the
	// server received so far.
	launch func(t *testing.T) (Options, func() [][]byte)
	// direct is a transport straight to the server, for the version a
	// client negotiates without the bridge.
	direct func(t *testing.T) sdk.Transport
	// mcpgoDirect is the same for an mcp-go client.
	mcpgoDirect func(t *testing.T) transport.Interface
	// cannot names, by era, why the peer cannot elicit in that era.
	cannot map[string]string
}

const (
	goAccept = `{"action":"accept","content":{"n":7,"name":"Ada"}}`
	tsAccept = `{"action":"accept","content":{"email":"ada@example.com","interests":["backend"],"newsletter":true,"password":"correct-horse","role":"developer","username":"ada"}}`
)

// matrixPeers returns the peers. HTTP servers start once, on first use,
// and stop when t ends.
func matrixPeers(t *testing.T) []*matrixPeer {
	goValid := map[string]any{"name": "Ada", "n": json.Number("7")}
	goInvalid := map[string]any{"name": "Ada", "n": json.Number("42")}
	goFields := []string{"name", "n"}
	goPeer := func(args ...string) func(*testing.T) string {
		return func(ct *testing.T) string {
			return startHTTPPeer(ct, t, append([]string{gosdkBin, "-http", "127.0.0.1:0"}, args...), nil, "listening on").url
		}
	}
	mcpgoHTTP := func(ct *testing.T) string {
		return startHTTPPeer(ct, t, []string{serverBin, "-http", "127.0.0.1:0"}, nil, "listening on").url
	}
	tsForm := func(ct *testing.T) string {
		js := tsExample(ct, "elicitationFormExample.js")
		port := examplePort(ct)
		startHTTPPeer(ct, t, []string{"node", js}, []string{fmt.Sprintf("PORT=%d", port)}, "running on")
		return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	}
	goArgs := map[string]any{"schema": commonSchema}
	mcpgoArgs := map[string]any{"rounds": 1, "schema": commonSchema}
	statelessCannot := "a stateless go-sdk server cannot send a request to a client of this revision (no session, no stream for elicitation/create); only 2026-07-28's input_required works statelessly"
	peers := []*matrixPeer{
		{name: "go-sdk/stdio", subject: "gosdk-peer", tool: "ask", args: goArgs},
		{name: "go-sdk/http", subject: "gosdk-peer", tool: "ask", args: goArgs},
		{name: "go-sdk/http-stateless", subject: "gosdk-peer", tool: "ask", args: goArgs,
			cannot: map[string]string{"2025-06-18": statelessCannot, "2025-11-25": statelessCannot}},
		{name: "mcp-go/stdio", subject: "elicit-test-server", tool: "mrtr-ask", args: mcpgoArgs},
		{name: "mcp-go/http", subject: "elicit-test-server", tool: "mrtr-ask", args: mcpgoArgs},
	}
	wireStdio(peers[0], gosdkBin)
	wireHTTP(peers[1], goPeer())
	wireHTTP(peers[2], goPeer("-stateless"))
	wireStdio(peers[3], serverBin)
	wireHTTP(peers[4], mcpgoHTTP)
	for _, p := range peers {
		p.fields, p.valid, p.invalid, p.invalidRule, p.accept = goFields, goValid, goInvalid, `field "n": maximum`, goAccept
	}
	ts := &matrixPeer{name: "ts-sdk-form/http", subject: "form-elicitation-example-server", tool: "register_user", args: map[string]any{},
		fields: []string{"username", "email", "password", "newsletter", "role", "interests"},
		valid: map[string]any{"username": "ada", "email": "ada@example.com", "password": "correct-horse", "newsletter": true,
			"role": "developer", "interests": []any{"backend"}},
		invalid: map[string]any{"username": "a", "email": "ada@example.com", "password": "correct-horse"}, invalidRule: `field "username": minLength`,
		accept: tsAccept}
	wireHTTP(ts, tsForm)
	return append(peers, ts, tsURLPeer(t))
}

// wireStdio makes p a server spawned with argv, recording its stdin.
func wireStdio(p *matrixPeer, argv ...string) {
	p.launch = func(t *testing.T) (Options, func() [][]byte) {
		rec := newStdinRecord(t)
		return Options{Command: argv, Env: rec.env()}, rec.received
	}
	p.direct = func(t *testing.T) sdk.Transport {
		return &sdk.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}
	}
	p.mcpgoDirect = func(t *testing.T) transport.Interface { return transport.NewStdio(argv[0], nil, argv[1:]...) }
}

// wireHTTP makes p a streamable HTTP server that start runs on first use
// and whose MCP endpoint it returns; each session reaches it through a
// recording proxy of its own.
func wireHTTP(p *matrixPeer, start func(t *testing.T) string) {
	var once sync.Once
	var url string
	var skipped bool // start skipped: the peer is not installed here
	get := func(t *testing.T) string {
		once.Do(func() {
			defer func() { skipped = t.Skipped() }()
			url = start(t)
		})
		if skipped {
			t.Skip("the HTTP peer is not installed here; the first subtest that needed it says how to install it")
		}
		if url == "" {
			t.Fatal("the HTTP peer did not start")
		}
		return url
	}
	p.launch = func(t *testing.T) (Options, func() [][]byte) {
		rp := newRecordingProxy(t, get(t))
		return Options{URL: rp.url}, rp.received
	}
	p.direct = func(t *testing.T) sdk.Transport {
		return &sdk.StreamableClientTransport{Endpoint: get(t), MaxRetries: -1}
	}
	p.mcpgoDirect = func(t *testing.T) transport.Interface {
		tr, err := transport.NewStreamableHTTP(get(t))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
}

// tsExample returns the path of one of the TypeScript SDK's example
// servers.
func tsExample(t *testing.T, name string) string {
	t.Helper()
	js, _ := filepath.Abs("../internal/testpeers/npm/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/" + name)
	if _, err := os.Stat(js); err != nil {
		testenv.Missing(t, "@modelcontextprotocol/sdk's example "+js, "run npm ci --prefix internal/testpeers/npm (.ci/run does)")
	}
	return js
}

func TestInteropMatrix(t *testing.T) {
	t.Parallel()
	began := time.Now()
	t.Cleanup(func() { t.Logf("the interoperability matrix took %v", time.Since(began).Round(time.Millisecond)) })
	var versions sync.Map // peer/era → the version negotiated without the bridge
	for _, p := range matrixPeers(t) {
		for _, era := range eras {
			if reason := p.cannot[era]; reason != "" {
				t.Run(p.name+"/"+era+"/cannot-elicit", func(t *testing.T) {
					t.Parallel()
					cannotElicit(t, p, era, reason)
				})
				continue
			}
			for _, outcome := range outcomes {
				t.Run(p.name+"/"+era+"/"+outcome, func(t *testing.T) {
					t.Parallel()
					direct := func() string {
						v, _ := versions.LoadOrStore(p.name+"/"+era, sync.OnceValue(func() string { return directVersion(t, p.direct(t), era) }))
						return v.(func() string)()
					}
					matrixCell(t, p, era, outcome, direct)
				})
			}
		}
	}
}

// matrixCell runs one cell: a session through the bridge, a question,
// the operator's outcome, and what the server received.
func matrixCell(t *testing.T, p *matrixPeer, era, outcome string, direct func() string) {
	o, received := p.launch(t)
	if outcome == "timeout" {
		o.Timeout = 300 * time.Millisecond
	}
	s := startSDKSession(t, o, era, nil)
	checkClient(t, s.next("session.started"), "gosdk-client", "1.8.0")
	negotiated, alone := s.cs.InitializeResult().ProtocolVersion, direct()
	if negotiated != alone {
		t.Errorf("negotiated %s through the bridge; want %s, as without it", negotiated, alone)
	} else {
		t.Logf("negotiated %s, as without the bridge", negotiated)
	}
	var call <-chan sdkCall
	if p.tool != "" {
		call = s.call(p.tool, p.args)
	}
	req := s.next("attention.requested")
	checkQuestion(t, req, p.subject, p.kind, p.fields)
	valid := aep.Answer{Values: p.valid, Option: p.acceptAnswer}
	want := []string{map[string]string{"accept": p.accept, "invalid-then-valid": p.accept,
		"decline": `{"action":"decline"}`, "cancel": `{"action":"cancel"}`, "timeout": `{"action":"cancel"}`}[outcome]}
	if p.callError != 0 {
		want = nil
		checkCallError(t, <-call, p.callError)
		call = nil
	}
	switch outcome {
	case "accept":
		mustAccept(t, s.respond(req.ID, valid))
	case "decline", "cancel":
		mustAccept(t, s.respond(req.ID, aep.Answer{Option: outcome}))
	case "timeout":
		s.next("attention.timeout")
	case "invalid-then-valid":
		ack := s.respond(req.ID, aep.Answer{Values: p.invalid})
		var nack struct {
			Data struct{ Reason, Detail string }
		}
		json.Unmarshal([]byte(ack), &nack)
		if nack.Data.Reason != "invalid" || !strings.HasPrefix(nack.Data.Detail, p.invalidRule) {
			t.Fatalf("the invalid answer got %s; want rejected invalid naming %s", ack, p.invalidRule)
		}
		mustAccept(t, s.respond(req.ID, valid))
	}
	if call != nil {
		select {
		case r := <-call:
			if r.err != nil || r.res.IsError {
				t.Fatalf("tools/call: %v %s", r.err, r.text())
			}
		case <-time.After(2 * waitLimit):
			t.Fatal("tools/call did not return")
		}
	}
	if diff := cmp.Diff(want, receivedElicitResults(received())); diff != "" {
		t.Errorf("the ElicitResult the server received, byte for byte (-want +got):\n%s", diff)
	}
}

// cannotElicit checks a documented limitation: the peer cannot elicit in
// this era, so the call fails with the server's own error and no
// question is raised.
func cannotElicit(t *testing.T, p *matrixPeer, era, reason string) {
	t.Logf("this peer cannot elicit in %s: %s", era, reason)
	o, _ := p.launch(t)
	s := startSDKSession(t, o, era, nil)
	r := <-s.call(p.tool, p.args)
	if r.err == nil && !r.res.IsError {
		t.Fatalf("the call succeeded (%s); the limitation this cell documents is gone: make it a full row", r.text())
	}
	s.close() // the session is over: every event it had is queued
	for {
		select {
		case d, ok := <-s.events.C:
			if !ok {
				return
			}
			if d.Event.Type == "attention.requested" {
				t.Fatalf("a question was raised: %s", d.Event.Data)
			}
			continue
		default:
		}
		return
	}
}

// checkQuestion checks a question's subject, kind and field ids.
func checkQuestion(t *testing.T, req aep.Event, subject, kind string, fields []string) {
	t.Helper()
	if req.Subject != subject {
		t.Errorf("question subject %q; want the server's name %q", req.Subject, subject)
	}
	var data struct {
		Kind   string `json:"kind"`
		Fields []struct {
			ID string `json:"id"`
		} `json:"fields"`
	}
	json.Unmarshal(req.Data, &data)
	var ids []string
	for _, f := range data.Fields {
		ids = append(ids, f.ID)
	}
	if kind == "" {
		kind = "form"
	}
	if data.Kind != kind || !cmp.Equal(ids, fields) {
		t.Errorf("question kind %q fields %v; want %s with %v", data.Kind, ids, kind, fields)
	}
}

// checkClient checks that session.started names the client, in every era
// (from initialize, or from the clientInfo _meta of 2026-07-28).
func checkClient(t *testing.T, started aep.Event, name, version string) {
	t.Helper()
	var data struct {
		Client struct{ Name, Version string }
	}
	json.Unmarshal(started.Data, &data)
	if data.Client.Name != name || data.Client.Version != version {
		t.Errorf("session.started %s; want the client %s %s", started.Data, name, version)
	}
}

// checkCallError checks that a call ended with the JSON-RPC error code.
func checkCallError(t *testing.T, r sdkCall, code int64) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(r.err, &werr) || werr.Code != code {
		t.Fatalf("tools/call: %v %s; want the JSON-RPC error %d", r.err, r.text(), code)
	}
}

func mustAccept(t *testing.T, ack string) {
	t.Helper()
	if !strings.Contains(ack, `"type":"control.accepted"`) {
		t.Fatalf("the operator's answer got %s; want control.accepted", ack)
	}
}

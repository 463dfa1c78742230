package elicit

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// TestRefusedQuestions: a question the lifecycle refuses at a limit gets
// the server an error that names the limit, or, when the client can elicit
// and the route lets it, goes to the client alone.
func TestRefusedQuestions(t *testing.T) {
	tooLarge := &attention.LimitError{Limit: attention.LimitEventBytes, Max: 1000, Size: 2000}
	tooMany := &attention.LimitError{Limit: attention.LimitOpen, Max: 256}
	const answer = `{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{"ok":true}}}`
	tests := []struct {
		name       string
		route      Route
		init       string
		err        error
		wantServer []string
		wantClient []string
	}{
		{"too large, the client cannot elicit", RouteBoth, plainClientInit, tooLarge,
			[]string{`{"jsonrpc":"2.0","id":"e1","error":{"code":-32602,"message":"Invalid params: the question is too large for the bridge (limit: event bytes): ` + tooLarge.Error() + `"}}`}, nil},
		{"too many, the client cannot elicit", RouteBoth, plainClientInit, tooMany,
			[]string{`{"jsonrpc":"2.0","id":"e1","error":{"code":-32603,"message":"the bridge is at a limit (open questions): ` + tooMany.Error() + `"}}`}, nil},
		{"route remote keeps the client out", RouteRemote, formClientInit, tooMany,
			[]string{`{"jsonrpc":"2.0","id":"e1","error":{"code":-32603,"message":"the bridge is at a limit (open questions): ` + tooMany.Error() + `"}}`}, nil},
		{"the client can elicit: it answers alone", RouteBoth, formClientInit, tooLarge,
			[]string{answer}, []string{formQuestion}},
		{"route client: the client answers alone", RouteClient, formClientInit, tooMany,
			[]string{answer}, []string{formQuestion}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, sv := newMemConn(), newMemConn()
			life := &fakeLifecycle{raiseErr: fmt.Errorf("raising: %w", tt.err)}
			p := New(Options{Client: cl, Server: sv, Manager: life, Route: tt.route})
			p.fromClient([]byte(tt.init))
			written(sv)
			p.fromServer([]byte(formQuestion))
			gotClient := written(cl)
			if len(gotClient) > 0 {
				p.fromClient([]byte(answer))
			}
			if diff := cmp.Diff(tt.wantServer, written(sv)); diff != "" {
				t.Errorf("the server received (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantClient, gotClient); diff != "" {
				t.Errorf("the client received (-want +got):\n%s", diff)
			}
			if got := trackedBy(p); got.questions != 0 {
				t.Errorf("tracked %+v; want no question", got)
			}
		})
	}
}

const plainClientInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

// TestRefusalsDoNotFloodTheLog: a server that keeps asking over a limit
// gets a Warn line for its 1st, 2nd, 4th… refusal and Debug otherwise,
// never an Error.
func TestRefusalsDoNotFloodTheLog(t *testing.T) {
	h := &logRecorder{}
	cl, sv := newMemConn(), newMemConn()
	life := &fakeLifecycle{raiseErr: &attention.LimitError{Limit: attention.LimitOpen, Max: 256}}
	p := New(Options{Client: cl, Server: sv, Manager: life, Route: RouteRemote, Logger: slog.New(h)})
	for i := range 100 {
		p.fromServer([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`, i)))
	}
	if n := len(written(sv)); n != 100 {
		t.Errorf("the server got %d answers; want 100", n)
	}
	levels := map[slog.Level]int{}
	h.mu.Lock()
	for _, r := range h.records {
		levels[r.Level]++
	}
	h.mu.Unlock()
	if want := map[slog.Level]int{slog.LevelWarn: 7, slog.LevelDebug: 93}; !cmp.Equal(levels, want) {
		t.Errorf("log lines by level: got %v; want %v", levels, want)
	}
}

// TestRefusedRoundQuestion: a multi round-trip input request the lifecycle
// refuses at a limit fails the client's request with an error that names
// the input request and the limit.
func TestRefusedRoundQuestion(t *testing.T) {
	cl, sv := newMemConn(), newMemConn()
	le := &attention.LimitError{Limit: attention.LimitOpen, Max: 256}
	p := New(Options{Client: cl, Server: sv, Manager: &fakeLifecycle{raiseErr: le}, Route: RouteRemote})
	p.fromClient([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	p.fromServer([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}},"requestState":"s"}}`))
	want := []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"input request q: the bridge is at a limit (open questions): ` + le.Error() + `"}}`}
	if diff := cmp.Diff(want, written(cl)); diff != "" {
		t.Errorf("the client received (-want +got):\n%s", diff)
	}
}

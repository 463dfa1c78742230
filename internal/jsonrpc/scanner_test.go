package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestScanEnvelope(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	tests := []struct {
		name    string
		msg     string
		capture map[string]int
		want    Envelope
		wantErr string
	}{
		{name: "request, envelope first", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
			want: Envelope{ID: json.RawMessage(`1`), Method: "tools/call", Params: true, MaxDepth: 2}},
		{name: "method after params (mcp-go's order)", msg: `{"jsonrpc":"2.0","id":"a","params":{"big":"` + strings.Repeat("x", 1000) + `"},"method":"tools/call"}`,
			want: Envelope{ID: json.RawMessage(`"a"`), Method: "tools/call", Params: true, MaxDepth: 2}},
		{name: "id after a deep result", msg: `{"result":{"v":` + deep + `},"id":7,"jsonrpc":"2.0"}`,
			want: Envelope{ID: json.RawMessage(`7`), Result: true, MaxDepth: 100002}},
		{name: "notification", msg: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}`,
			capture: map[string]int{"params.progressToken": 64},
			want: Envelope{Method: "notifications/progress", Params: true, MaxDepth: 2,
				Members: map[string]json.RawMessage{"params.progressToken": json.RawMessage(`3`)}}},
		{name: "escaped names and strings", msg: `{"\u0069d":"a\"}\\","method":"x\\\"y","params":{"_meta":{"k":"}]"}}}`,
			capture: map[string]int{"params._meta": 100},
			want: Envelope{ID: json.RawMessage(`"a\"}\\"`), Method: `x\"y`, Params: true, MaxDepth: 3,
				Members: map[string]json.RawMessage{"params._meta": json.RawMessage(`{"k":"}]"}`)}}},
		{name: "member over its limit", msg: `{"id":1,"result":{"resultType":"` + strings.Repeat("y", 50) + `"}}`,
			capture: map[string]int{"result.resultType": 10},
			want:    Envelope{ID: json.RawMessage(`1`), Result: true, MaxDepth: 2, Over: []string{"result.resultType"}}},
		{name: "error response", msg: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}`,
			capture: map[string]int{"error.code": 16},
			want: Envelope{ID: json.RawMessage(`null`), Error: true, MaxDepth: 2,
				Members: map[string]json.RawMessage{"error.code": json.RawMessage(`-32700`)}}},
		{name: "batch", msg: `[{"id":1,"method":"a"}]`, want: Envelope{Batch: true, MaxDepth: 2}},
		{name: "duplicate id", msg: `{"id":1,"method":"a","id":2}`, want: Envelope{ID: json.RawMessage(`2`), Method: "a", Duplicate: "id", MaxDepth: 1}},
		{name: "not an object", msg: `"hi"`, wantErr: "a JSON-RPC message is an object or a batch"},
		{name: "truncated", msg: `{"id":5,"method":"a","params":{"x":[1,2`, want: Envelope{ID: json.RawMessage(`5`), Method: "a", Params: true, MaxDepth: 3},
			wantErr: "the message ends after 39 bytes"},
		{name: "garbage after the id", msg: `{"id":9 x}`, want: Envelope{ID: json.RawMessage(`9`), MaxDepth: 1}, wantErr: `want ',' or '}'`},
		{name: "empty", msg: ` `, wantErr: "the message is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, piece := range []int{1, 3, 7, 1 << 20} {
				var out bytes.Buffer
				env, err := scanPieces([]byte(tt.msg), piece, ScanOptions{Out: &out, Capture: tt.capture})
				if tt.wantErr == "" && err != nil {
					t.Fatalf("pieces of %d: got error %v; want none", piece, err)
				}
				if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Fatalf("pieces of %d: got error %v; want one containing %q", piece, err, tt.wantErr)
				}
				if tt.wantErr != "" && tt.want.MaxDepth == 0 {
					continue
				}
				if diff := cmp.Diff(tt.want, *env, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Envelope{}, "IDAt", "MethodAt", "ParamsAt", "ResultAt", "ErrorAt")); diff != "" {
					t.Errorf("pieces of %d: envelope (-want +got):\n%s", piece, diff)
				}
				if out.String() != tt.msg {
					t.Errorf("pieces of %d: wrote %d bytes that differ from the %d read", piece, out.Len(), len(tt.msg))
				}
			}
		})
	}
}

// scanPieces scans msg written in pieces of n bytes.
func scanPieces(msg []byte, n int, o ScanOptions) (*Envelope, error) {
	s := NewScanner(o)
	for len(msg) > 0 {
		k := min(n, len(msg))
		if _, err := s.Write(msg[:k]); err != nil {
			return s.Envelope(), err
		}
		msg = msg[k:]
	}
	if err := s.Finish(); err != nil {
		return s.Envelope(), err
	}
	return s.Envelope(), s.Err()
}

func TestScanSpans(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id" : "a b" ,"params":{"x":[1,{"y":"}"}]},"method":"m","result":7,"error":null}`)
	env, err := Scan(msg, ScanOptions{Alias: true, Capture: map[string]int{"params.x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  Span
		want string
	}{{"id", env.IDAt, `"a b"`}, {"method", env.MethodAt, `"m"`}, {"params", env.ParamsAt, `{"x":[1,{"y":"}"}]}`},
		{"result", env.ResultAt, `7`}, {"error", env.ErrorAt, `null`}} {
		if got := string(c.got.Of(msg)); got != c.want {
			t.Errorf("%s: got %s; want %s", c.name, got, c.want)
		}
	}
	if got := string(env.Members["params.x"]); got != `[1,{"y":"}"}]` {
		t.Errorf("an aliased capture over its limit: got %s; want the whole value", got)
	}
}

func TestScanRewrite(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		path string
		want string
	}{
		{name: "a member of params", msg: `{"id":1,"params":{"a":[1],"_meta":{"k":1},"z":2},"method":"m"}`, path: "params._meta",
			want: `{"id":1,"params":{"a":[1],"_meta":{"new":true},"z":2},"method":"m"}`},
		{name: "the id", msg: `{"jsonrpc":"2.0","id":"own-1","result":{"content":"x"}}`, path: "id",
			want: `{"jsonrpc":"2.0","id":{"new":true},"result":{"content":"x"}}`},
		{name: "a literal member", msg: `{"id":1,"params":{"_meta":17 }}`, path: "params._meta",
			want: `{"id":1,"params":{"_meta":{"new":true} }}`},
		{name: "over its limit: unchanged", msg: `{"id":1,"params":{"_meta":"` + strings.Repeat("m", 40) + `"}}`, path: "params._meta",
			want: `{"id":1,"params":{"_meta":"` + strings.Repeat("m", 40) + `"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, piece := range []int{1, 2, 5, 1 << 20} {
				var out bytes.Buffer
				o := ScanOptions{Out: &out, Capture: map[string]int{tt.path: 32}, Rewritable: map[string]bool{tt.path: true},
					Rewrite: func(string, []byte, *Envelope) []byte { return []byte(`{"new":true}`) }}
				if _, err := scanPieces([]byte(tt.msg), piece, o); err != nil {
					t.Fatal(err)
				}
				if got := out.String(); got != tt.want {
					t.Errorf("pieces of %d: got %s; want %s", piece, got, tt.want)
				}
			}
		})
	}
}

func TestErrorResponse(t *testing.T) {
	tests := []struct {
		name string
		id   string
		want string
	}{
		{name: "number", id: `7`, want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"bad \"x\""}}`},
		{name: "spaced string", id: ` "a b" `, want: `{"jsonrpc":"2.0","id":"a b","error":{"code":-32600,"message":"bad \"x\""}}`},
		{name: "none", id: ``, want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad \"x\""}}`},
		{name: "not JSON", id: `{`, want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad \"x\""}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(ErrorResponse(json.RawMessage(tt.id), CodeInvalidRequest, `bad "x"`)); got != tt.want {
				t.Errorf("got %s; want %s", got, tt.want)
			}
		})
	}
}

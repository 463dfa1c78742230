package elicit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMetaCapabilitiesAreAddedToWhatTheClientSent: the bridge declares
// elicitation in a 2026-07-28 request's per-request client capabilities
// (DESIGN decision 2), and only there: a request that carries no
// capabilities object, or one that is not an object, reaches the server
// as the client sent it, so the server refuses it as it would directly
// (-32602: MCP 2026-07-28 requires the capabilities in every request's
// _meta). Completed, it passed as valid.
func TestMetaCapabilitiesAreAddedToWhatTheClientSent(t *testing.T) {
	const version = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	tests := []struct {
		name, meta string
		want       string // the message the server gets; "" means the bytes the client sent
	}{
		{name: "capabilities without elicitation get it", meta: version + `,"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}`,
			want: `{"id":1,"jsonrpc":"2.0","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}},"sampling":{}},` + version + `}}}`},
		{name: "no capabilities stay absent", meta: version},
		{name: "null capabilities stay null", meta: version + `,"io.modelcontextprotocol/clientCapabilities":null`},
		{name: "capabilities that are not an object stay as they are", meta: version + `,"io.modelcontextprotocol/clientCapabilities":"all"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, sv := newMemConn(), newMemConn()
			p := New(Options{Client: cl, Server: sv, Manager: &fakeLifecycle{}, Route: RouteBoth})
			in := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + tt.meta + `}}}`
			p.fromClient([]byte(in))
			want := in
			if tt.want != "" {
				want = tt.want
			}
			if diff := cmp.Diff([]string{want}, written(sv)); diff != "" {
				t.Errorf("the server received (-want +got):\n%s", diff)
			}
		})
	}
}

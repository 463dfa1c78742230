package upstream

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
)

// parseOutboundJSON is what parseOutbound read with encoding/json before
// it read in one pass: the reference it must agree with wherever member
// names are written exactly.
func parseOutboundJSON(msg []byte) outbound {
	var m struct {
		envelope
		Params struct {
			Meta      map[string]json.RawMessage `json:"_meta"`
			Name      *string                    `json:"name"`
			URI       *string                    `json:"uri"`
			Arguments json.RawMessage            `json:"arguments"`
			RequestID json.RawMessage            `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		var env envelope
		json.Unmarshal(msg, &env)
		return outbound{envelope: env}
	}
	o := outbound{envelope: m.envelope, args: m.Params.Arguments}
	if v, ok := m.Params.Meta[mcp.MetaKeyProtocolVersion]; ok {
		json.Unmarshal(v, &o.version)
	}
	switch m.Method {
	case string(mcp.MethodToolsCall), string(mcp.MethodPromptsGet):
		o.hasName = m.Params.Name != nil
		if o.hasName {
			o.name = *m.Params.Name
		}
	case string(mcp.MethodResourcesRead):
		o.hasName = m.Params.URI != nil
		if o.hasName {
			o.name = *m.Params.URI
		}
	case string(mcp.MethodNotificationCancelled):
		o.cancels = m.Params.RequestID
	}
	return o
}

// outboundNames are the member names parseOutbound reads.
var outboundNames = []string{"id", "method", "params", "_meta", "name", "uri", "arguments", "requestId"}

// caseMatters reports whether msg may spell a member name parseOutbound
// reads in another case (or with a letter Unicode folds into it: ſ, K),
// which encoding/json matches and it does not.
func caseMatters(msg []byte) bool {
	lower := bytes.ToLower(msg)
	for _, n := range outboundNames {
		if bytes.Count(lower, bytes.ToLower([]byte(n))) != bytes.Count(msg, []byte(n)) {
			return true
		}
	}
	for _, fold := range []string{"ſ", "K", `\u017f`, `\u212a`} {
		if bytes.Contains(lower, []byte(fold)) {
			return true
		}
	}
	return false
}

func checkOutbound(t *testing.T, msg []byte) {
	t.Helper()
	if caseMatters(msg) {
		return
	}
	got, want := parseOutbound(msg), parseOutboundJSON(msg)
	norm := func(o outbound) outbound {
		for _, b := range []*json.RawMessage{&o.ID, &o.args, &o.cancels} {
			if len(*b) == 0 {
				*b = nil
			}
		}
		return o
	}
	if diff := cmp.Diff(norm(want), norm(got), cmp.AllowUnexported(outbound{})); diff != "" {
		t.Errorf("%.200q: parseOutbound differs from encoding/json (-json +got):\n%s", msg, diff)
	}
}

func TestParseOutbound(t *testing.T) {
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":null}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"r"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"_meta":"x","name":"n"}}`,
		`{"jsonrpc":"2.0","id":7,"method":7,"params":{"name":"n"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":null}`,
		`{"id":9,"id":10,"method":"tools/call","params":{"name":"a","name":"b","_meta":{"io.modelcontextprotocol/protocolVersion":1}}}`,
		`{"\u0069d":11,"method":"tools/c\u0061ll","params":{"n\u0061me":"\u00e9"}}`,
		`[{"id":1,"method":"ping"}]`, `{"id":1,"method":"ping"} x`, `not json`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		checkOutbound(t, []byte(m))
	}
}

// FuzzParseOutbound holds parseOutbound to encoding/json's reading of a
// client message, for any bytes whose member names are written exactly.
func FuzzParseOutbound(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r"}}`))
	f.Add([]byte(`{"id":2,"method":"resources/read","params":{"uri":"u"}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		checkOutbound(t, msg)
	})
}

package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzEnvelope feeds POST bodies and Last-Event-ID values, both from
// clients, to the gateway's readers: they never panic, a body they accept
// is JSON-RPC objects, and an event id they accept names a stream and a
// non-negative position.
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t","io.modelcontextprotocol/protocolVersion":"2026-07-28"},"requestState":"s"}}`), "p3_7")
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"a","result":{"resultType":"input_required","requestState":"x"}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}]`), "g1_0")
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":[]}`), "_")
	f.Add([]byte(`[]`), "p_1")
	f.Add([]byte(`{"id":{"x":1},"params":5}`), "p1_-1")
	f.Fuzz(func(t *testing.T, body []byte, lastID string) {
		msgs, _, ok := split(body)
		if ok {
			for _, m := range msgs {
				env, ok := parse(m)
				if !ok {
					continue
				}
				if env.isRequest() && env.isResponse() {
					t.Fatalf("%s is both a request and a response", m)
				}
				_ = idKey(env.ID)
				_ = env.progressToken()
			}
		}
		if sid, seq, ok := parseEventID(lastID); ok && (sid == "" || seq < 0) {
			t.Fatalf("parseEventID(%q) = %q, %d", lastID, sid, seq)
		}
	})
}

// FuzzRequestState feeds a client's retries to the requestState
// unwrapping (requeststate.go): it never panics; it opens only a wrapper
// the sealer minted, and gives back that wrapper's own state; and the
// body it returns is the same JSON but for params.requestState. The
// corpus holds minted wrappers, so the fuzzer mutates real ones.
func FuzzRequestState(f *testing.F) {
	sealer, err := newStateSealer("the fuzzed fleet")
	if err != nil {
		f.Fatal(err)
	}
	now := time.UnixMilli(1_900_000_000_000)
	ask := requestBinding("tools/call", "ask")
	// The key comes from the secret, so every fuzzing process opens the
	// wrappers any of them minted (each seals with nonces of its own):
	// a round is known by its id.
	minted := map[roundID]json.RawMessage{}
	for i, st := range []string{`"ask-1"`, `{"step":[1,2]}`, `null`, `"round-2:{\"who\":\"x\"}"`, `""`} {
		w := sealer.seal(sealedState{round: roundID{byte(i + 1)}, expires: now.Add(time.Hour), client: clientBinding(anonymous), request: ask, state: json.RawMessage(st)})
		minted[roundID{byte(i + 1)}] = json.RawMessage(st)
		q, _ := json.Marshal(w)
		f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","requestState":` + string(q) + `,"inputResponses":{"a":{"action":"accept"}}}}`))
	}
	f.Add([]byte(`{"params":{"RequestState":"x","requestState":"y"}}`))
	f.Add([]byte(`{"params":{"request\u0053tate":"aepgw1.AAAA"}}`))
	f.Add([]byte(`{"Params":{},"params":{"requestState":null}}`))
	f.Add([]byte(`[{"params":{"requestState":"x"}}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var wrapper json.RawMessage
		var opened sealedState
		out, found, err := replaceMember(body, "params", "requestState", func(w json.RawMessage) (json.RawMessage, error) {
			s, err := sealer.open(w, now, ask, anonymous)
			wrapper, opened = w, s
			return s.state, err
		})
		if err != nil || !found {
			return
		}
		want, ok := minted[opened.round]
		if !ok {
			t.Fatalf("opened a wrapper nobody minted: %s", wrapper)
		}
		if string(opened.state) != string(want) {
			t.Fatalf("wrapper %s gave state %s; want %s", wrapper, opened.state, want)
		}
		var in, got map[string]any
		if json.Unmarshal(body, &in) != nil {
			t.Fatalf("unwrapped a body that is not a JSON object: %q", body)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("the unwrapped body is not JSON: %v\n%s", err, out)
		}
		var state any
		json.Unmarshal(want, &state)
		in["params"].(map[string]any)["requestState"] = state
		if diff := cmp.Diff(in, got); diff != "" {
			t.Fatalf("the unwrapped body differs beyond requestState (-want +got):\n%s", diff)
		}
	})
}

// FuzzParamHeaders feeds a server's tools/list result and a client's
// tools/call body and Mcp-Param-Region header to the gateway's
// x-mcp-header check: it never panics, and a tool it learned refuses a
// call whose bound argument is present but whose header is absent.
func FuzzParamHeaders(f *testing.F) {
	f.Add([]byte(`{"result":{"tools":[{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}}`),
		[]byte(`{"region":"us-west1"}`), "us-west1")
	f.Add([]byte(`{"result":{"tools":[{"name":"sql","inputSchema":{"properties":{"a":{"properties":{"b":{"x-mcp-header":"Region"}}}}}}]}}`),
		[]byte(`{"a":{"b":12}}`), "=?base64?MTI=?=")
	f.Add([]byte(`{"result":{"tools":[{"name":"sql","inputSchema":[]}]}}`), []byte(`null`), "")
	f.Fuzz(func(t *testing.T, list, args []byte, header string) {
		var tools toolHeaders
		tools.learn(list)
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "name": "sql", "arguments": json.RawMessage(args)}})
		if err != nil {
			return // args is not JSON
		}
		env, ok := parse(body)
		if !ok {
			return
		}
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
		r.Header.Set(mcp.HeaderMethod, "tools/call")
		r.Header.Set(mcp.HeaderName, "sql")
		if header != "" {
			r.Header["Mcp-Param-Region"] = []string{header}
		}
		got := headersMismatch(r, body, &env, &tools)
		var a struct {
			Region json.RawMessage `json:"region"`
		}
		if header == "" && got == "" && tools.get("sql") != nil && json.Unmarshal(args, &a) == nil && len(a.Region) > 0 && string(a.Region) != "null" {
			if binds := mcp.ExtractParamHeaderBindings(tools.get("sql")); len(binds) == 1 && len(binds[0].Path) == 1 && binds[0].Path[0] == "region" && binds[0].Header == "Region" {
				t.Fatalf("a call with region %s and no Mcp-Param-Region header was accepted", a.Region)
			}
		}
	})
}

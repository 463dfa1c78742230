package gateway

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
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

// FuzzAuthenticate feeds Authorization header values, from anyone, to the
// gateway's authentication with one named client and the shared token:
// it never panics; only the client's exact credential is that client,
// only the exact token is its holder, everything else is refused with a
// reason that never quotes what was sent.
func FuzzAuthenticate(f *testing.F) {
	cred, v, err := identity.NewCredential(identity.KindClient, rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	const token = "fuzz-shared-token"
	client := identity.Client{Name: "ci", Credential: v}
	s := &Server{log: slog.New(slog.DiscardHandler), auth: true, token: sha256.Sum256([]byte(token)), holder: tokenHolder(token),
		refusedLogged: map[string]time.Time{}}
	s.clients.Store(identity.NewDirectory(&identity.Document{Clients: []identity.Client{client}}))
	for _, h := range []string{"Bearer " + cred, "Bearer " + token, "bearer  " + cred + " ", "Basic " + token, "Bearer " + identity.PrefixClient + token,
		"Bearer " + cred[:len(cred)-1] + "x", "Bearer", "", "Bearer " + strings.ToUpper(cred)} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", h)
		who, c, why := s.authenticate(r)
		tok, _ := bearerOf(r)
		switch {
		case why != "":
			if who != "" || c != nil {
				t.Fatalf("refused %q yet authenticated as %q", h, who)
			}
			if len(tok) >= 8 && strings.Contains(why, tok) {
				t.Fatalf("the refusal quotes what was sent: %s", why)
			}
		case c != nil:
			if tok != cred || c.Name != "ci" || who != clientPrincipal(client) {
				t.Fatalf("%q authenticated as client %s (%s)", h, c.Name, who)
			}
		default:
			if tok != token || who != s.holder {
				t.Fatalf("%q authenticated as %s", h, who)
			}
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

// FuzzSharedRewrite feeds client requests to the rewrites of a shared
// session (shared.go): the id, and the progress token, that a request
// takes upstream, and the client's own id put back on what answers it.
// It never panics; a rewrite either refuses the message or yields JSON
// whose member is the new value and whose every other member is as it
// was; and putting the client's id back yields the request as the
// client wrote it.
func FuzzSharedRewrite(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","ID":"b","method":"ping"}`))
	f.Add([]byte(`{"id":1,"params":{"_meta":5}}`))
	f.Add([]byte(`{"id":1,"params":{"_meta":{"progressToken":1,"progresstoken":2}}}`))
	f.Add([]byte(`{"id":[1,{"x":2}],"params":[]}`))
	f.Add([]byte(` {"id" : 1e3 , "x":{"y":"\u00e9"}} `))
	f.Fuzz(func(t *testing.T, body []byte) {
		up, tok := json.RawMessage(`"aepgw-1"`), json.RawMessage(`"aepgw-t1"`)
		out, found, err := setPath(body, up, "id")
		if err != nil {
			return // refused: not one object, or an ambiguous id
		}
		if !found {
			if !bytes.Equal(out, body) {
				t.Fatalf("no id, yet the message changed: %s -> %s", body, out)
			}
			return
		}
		var orig any
		if err := json.Unmarshal(body, &orig); err != nil {
			t.Fatalf("a rewrite took %s, which is no JSON: %v", body, err)
		}
		ms, _ := objectMembers(body)
		i, _ := only(ms, "id")
		back, _, err := setPath(out, ms[i].value, "id")
		if err != nil {
			t.Fatalf("putting the id back on %s: %v", out, err)
		}
		var got any
		if err := json.Unmarshal(back, &got); err != nil || !reflect.DeepEqual(got, orig) {
			t.Fatalf("the round trip of %s gave %s (%v)", body, back, err)
		}
		withTok, found, err := setPath(out, tok, "params", "_meta", "progressToken")
		if err != nil || !found {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(withTok, &m); err != nil || string(m.ID) != string(up) || string(m.Params.Meta["progressToken"]) != string(tok) {
			t.Fatalf("%s rewritten: %s (%v)", body, withTok, err)
		}
	})
}

package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
)

// lockedBuffer is a log destination tests read while the gateway writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// identities is a state folder's identity document for a test.
type identities struct {
	t    *testing.T
	path string
}

func newIdentities(t *testing.T) *identities {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &identities{t: t, path: store.Path(dir)}
}

// add adds a client named name with scope servers and expiry expires
// (zero: never) and returns its credential, as `clients add` does.
func (ids *identities) add(name string, expires time.Time, servers ...string) string {
	ids.t.Helper()
	text, v, err := identity.NewCredential(identity.KindClient, rand.Reader)
	if err != nil {
		ids.t.Fatal(err)
	}
	scope, err := identity.ParseScope(servers)
	if err != nil {
		ids.t.Fatal(err)
	}
	err = store.Update(ids.path, func(d *identity.Document) error {
		return d.AddClient(identity.Client{Name: name, Servers: scope, Created: time.Now(), Expires: expires, Credential: v})
	})
	if err != nil {
		ids.t.Fatal(err)
	}
	return text
}

// revoke removes the client named name, as `clients revoke` does.
func (ids *identities) revoke(name string) {
	ids.t.Helper()
	if err := store.Update(ids.path, func(d *identity.Document) error {
		if !d.RemoveClient(name) {
			return fmt.Errorf("no client %s", name)
		}
		return nil
	}); err != nil {
		ids.t.Fatal(err)
	}
}

// TestNamedClientsThroughRealPeers: go-sdk's and mcp-go's streamable HTTP
// clients, each with a named client's credential, use one gateway beside
// a client of the shared token. Each session carries its client's name
// on every event and in the log; no client reaches another's session,
// whatever it sends; a revoked client's session ends and its next request
// gets 401 while the others go on; no credential is ever logged.
func TestNamedClientsThroughRealPeers(t *testing.T) {
	ids := newIdentities(t)
	aliceCred := ids.add("alice-ci", time.Time{})
	bobCred := ids.add("bob-ci", time.Time{})
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o := Options{Session: sessionOpts(elicit.RouteRemote), Identities: ids.path, IdentitiesInterval: 10 * time.Millisecond, Logger: logger}
	o.Session.Logger = logger
	g := startGateway(t, o)
	w := g.watch()

	alice := goSDKSessionWith(t, g, "go-sdk-alice", "2025-11-25", nil, aliceCred)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	bob, err := newMCPGoClientWith(ctx, g, "mcp-go-bob", "2025-11-25", bobCred)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	holder := rawSession(t, g, "token-holder-client", false)

	// Each works, and bob's question reaches the operators naming him.
	if r, err := alice.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "from alice"}}); err != nil || sdkText(r) != "from alice" {
		t.Fatalf("alice's echo: %v, %v", r, err)
	}
	answered := make(chan string, 1)
	go func() {
		r, err := callTool(ctx, bob, "ask", map[string]any{"message": "Bob deploys?"})
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- resultText(r)
	}()
	q := w.question(t, "Bob deploys?")
	var card string
	if err := jsonDecode(q.Extensions[aep.ExtClient], &card); err != nil || card != "bob-ci" {
		t.Errorf("bob's question carries %s %q; want the client bob-ci", aep.ExtClient, q.Extensions[aep.ExtClient])
	}
	g.answer(t, q, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	if got := <-answered; !strings.Contains(got, `"action":"accept"`) {
		t.Fatalf("bob's call: %s", got)
	}
	aliceSession, bobSession, holderSession := w.sessionOf(t, "go-sdk-alice"), w.sessionOf(t, "mcp-go-bob"), w.sessionOf(t, "token-holder-client")
	w.waitFor(t, "the events of three sessions", func(w *watcher) bool {
		return w.named[aliceSession] == "alice-ci" && w.named[bobSession] == "bob-ci"
	})
	w.mu.Lock()
	if w.named[holderSession] != "" || len(w.disagreeing) != 0 {
		t.Errorf("the token holder's session names client %q; sessions whose events disagree: %v", w.named[holderSession], w.disagreeing)
	}
	w.mu.Unlock()

	// Nobody reaches another's session: another client's credential, the
	// shared token, on POST, GET and DELETE, all get 404, as an unknown
	// session does.
	bobID := bob.GetTransport().GetSessionId()
	for _, tc := range []struct{ who, bearer, sid string }{
		{"alice with bob's session", aliceCred, bobID},
		{"the token holder with bob's session", mcpToken, bobID},
		{"bob with the token holder's session", bobCred, holder.id},
		{"bob with a session that never existed", bobCred, strings.Repeat("0", 32)},
	} {
		intruder := &raw{t: t, g: g, id: tc.sid, hd: http.Header{"Authorization": {"Bearer " + tc.bearer}}}
		for _, resp := range []*http.Response{
			intruder.post(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"message":"intruder"}}}`),
			intruder.get(""),
			g.request(t, "DELETE", "/mcp", intruder.header(), ""),
		} {
			if code, msg := status(t, resp); code != http.StatusNotFound || !strings.Contains(msg, "no such MCP session") {
				t.Errorf("%s, %s: got %d %q; want 404 as for an unknown session", tc.who, resp.Request.Method, code, msg)
			}
		}
	}
	if r, err := callTool(ctx, bob, "echo", map[string]any{"message": "still mine"}); err != nil || resultText(r) != "still mine" {
		t.Fatalf("bob's session after the intrusions: %v, %v", r, err)
	}

	// Revoking alice ends her session within the watcher's interval; her
	// next request gets 401; bob and the token holder go on.
	ids.revoke("alice-ci")
	w.waitFor(t, "alice's session.ended", func(w *watcher) bool { return w.ended[aliceSession] != "" })
	if _, err := alice.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "again"}}); err == nil {
		t.Error("alice's call after her revocation succeeded")
	}
	again := &raw{t: t, g: g, hd: http.Header{"Authorization": {"Bearer " + aliceCred}}}
	if code, msg := status(t, again.post(initBody)); code != http.StatusUnauthorized || !strings.Contains(msg, "revoked") {
		t.Errorf("alice's initialize after her revocation: got %d %q; want 401 saying her credential was revoked", code, msg)
	}
	if r, err := callTool(ctx, bob, "echo", map[string]any{"message": "bob goes on"}); err != nil || resultText(r) != "bob goes on" {
		t.Fatalf("bob after alice's revocation: %v, %v", r, err)
	}
	if r := holder.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"holder goes on"}}}`); !strings.Contains(strings.Join(readAll(t, r), ""), "holder goes on") {
		t.Error("the token holder's session did not go on after alice's revocation")
	}

	all := logs.String()
	for _, secret := range []string{aliceCred, bobCred, mcpToken, aliceCred[len(identity.PrefixClient)+identity.IDLen:]} {
		if strings.Contains(all, secret) {
			t.Fatalf("a credential or token is in the log")
		}
	}
	for _, want := range []string{"client=alice-ci session=" + aliceSession, "client=bob-ci session=" + bobSession, "ending a session of a client whose access was revoked or changed", "refused a named client", "reason=unknown"} {
		if !strings.Contains(all, want) {
			t.Errorf("the log has no %q:\n%s", want, all)
		}
	}
}

// TestNamedClientsRounds: an input_required round handed to one named
// client is no key for another, nor for the shared token's holder, and
// its own client's retry goes through.
func TestNamedClientsRounds(t *testing.T) {
	ids := newIdentities(t)
	aliceCred, malloryCred := ids.add("alice", time.Time{}), ids.add("mallory", time.Time{})
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteBoth), Identities: ids.path})
	w := g.watch()
	alice := &modern{t: t, g: g, name: "alice-app", elicit: true, token: aliceCred}
	state := inputRequired(t, "alice", answerOf(t, alice.call(`"a1"`, "mrtr-ask", nil, nil, nil)))
	q := w.question(t, "Who deploys?")
	var card string
	if jsonDecode(q.Extensions[aep.ExtClient], &card); card != "alice" {
		t.Errorf("the shared session's question names client %q; want alice", card)
	}
	g.answer(t, q, aep.Answer{Values: map[string]any{"who": "alice-secret"}})
	mine := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "mallory"}}}
	for _, intruder := range []*modern{
		{t: t, g: g, name: "mallory-app", elicit: true, token: malloryCred},
		{t: t, g: g, name: "holder-app", elicit: true},
	} {
		got := answerOf(t, intruder.call(`"m1"`, "mrtr-ask", nil, &state, mine))
		if strings.Contains(got.raw, "alice-secret") {
			t.Fatalf("%s got alice's result: %s", intruder.name, got.raw)
		}
		refusedState(t, intruder.name+" with alice's requestState", got, "another client")
	}
	got := answerOf(t, alice.call(`"a2"`, "mrtr-ask", nil, &state, nil))
	if !strings.Contains(got.text(), "alice-secret") {
		t.Errorf("alice's retry: got %s; want her operator's answer", got.raw)
	}
	g.sharedSessions(t, 1) // alice's: the intruders' retries were refused before reaching any
}

// TestClientCredentialsRefused: what a bearer value that looks like a
// credential gets, with the shared token still working beside it, and
// a client credential working when the token is off (--mcp-auth none).
func TestClientCredentialsRefused(t *testing.T) {
	ids := newIdentities(t)
	good := ids.add("ci", time.Time{})
	old := ids.add("old", time.Now().Add(1500*time.Millisecond))
	opText, _, _ := identity.NewCredential(identity.KindOperator, rand.Reader)
	stranger, _, _ := identity.NewCredential(identity.KindClient, rand.Reader)
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), Identities: ids.path, IdentitiesInterval: 10 * time.Millisecond})
	w := g.watch()
	tests := []struct {
		name, bearer string
		code         int
		says         string
	}{
		{"a client's credential", good, http.StatusOK, ""},
		{"the shared token", mcpToken, http.StatusOK, ""},
		{"a credential never issued", stranger, http.StatusUnauthorized, "revoked, or never issued"},
		{"an operator's credential", opText, http.StatusUnauthorized, "another kind of record"},
		{"a credential with one letter changed", good[:len(good)-1] + map[bool]string{true: "b", false: "a"}[good[len(good)-1] == 'a'], http.StatusUnauthorized, "not a credential of this bridge"},
		{"the shared token after a client prefix", identity.PrefixClient + mcpToken, http.StatusUnauthorized, "not a credential of this bridge"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &raw{t: t, g: g, hd: http.Header{"Authorization": {"Bearer " + tc.bearer}}}
			resp := c.post(initBody)
			code, msg := status(t, resp)
			if code != tc.code || !strings.Contains(msg, tc.says) || strings.Contains(msg, tc.bearer) {
				t.Errorf("got %d %q; want %d saying %q, never quoting the bearer", code, msg, tc.code, tc.says)
			}
			if code == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
	// A client whose access expires has its session ended then (or at
	// once, when the gateway was slower to start it than the expiry).
	c := &raw{t: t, g: g, hd: http.Header{"Authorization": {"Bearer " + old}}}
	resp := c.post(initBody)
	sid := resp.Header.Get(mcp.HeaderSessionID)
	resp.Body.Close()
	if sid != "" {
		w.waitFor(t, "the expired client's session.ended", func(w *watcher) bool {
			for session, name := range w.named {
				if name == "old" && w.ended[session] != "" {
					return true
				}
			}
			return false
		})
	}
	if code, msg := status(t, c.post(initBody)); code != http.StatusUnauthorized || !strings.Contains(msg, "expired") {
		t.Errorf("an expired client: got %d %q; want 401 saying its access expired", code, msg)
	}

	// Under --mcp-auth none, a client credential still names its client,
	// and a session it opened is not the anonymous principal's.
	open := startGatewayAuth(t, Options{Session: sessionOpts(elicit.RouteRemote), Identities: ids.path})
	mine := &raw{t: t, g: open, hd: http.Header{"Authorization": {"Bearer " + good}}}
	resp = mine.post(initBody)
	mine.id = resp.Header.Get(mcp.HeaderSessionID)
	resp.Body.Close()
	if mine.id == "" {
		t.Fatalf("a client credential under --mcp-auth none: %s", resp.Status)
	}
	anon := &raw{t: t, g: open, id: mine.id, hd: http.Header{"Authorization": {""}}}
	if code, _ := status(t, anon.get("")); code != http.StatusNotFound {
		t.Errorf("an anonymous request for a named client's session: got %d; want 404", code)
	}
	if code, msg := status(t, (&raw{t: t, g: open, hd: http.Header{"Authorization": {"Bearer " + stranger}}}).post(initBody)); code != http.StatusUnauthorized {
		t.Errorf("an unknown credential under --mcp-auth none: got %d %q; want 401", code, msg)
	}
}

// TestClientScope: a client whose record names servers uses a gateway
// whose sessions show one of them (--name), and no other; on a gateway
// whose sessions take the server's own name, a scoped client is refused,
// failing closed, and an unscoped one is served.
func TestClientScope(t *testing.T) {
	ids := newIdentities(t)
	deploy, billing, anyone := ids.add("deployer", time.Time{}, "deploy-*"), ids.add("biller", time.Time{}, "billing"), ids.add("anyone", time.Time{})
	named := bridgeCommand([]string{serverBin})
	named.Name = "deploy-web"
	gws := map[string]*gw{
		"deploy-web": startGateway(t, Options{Session: named, Identities: ids.path}),
		"unnamed":    startGateway(t, Options{Session: bridgeCommand([]string{serverBin}), Identities: ids.path}),
	}
	tests := []struct {
		gateway, client, bearer string
		code                    int
		says                    string
	}{
		{"deploy-web", "deployer", deploy, http.StatusOK, ""},
		{"deploy-web", "anyone", anyone, http.StatusOK, ""},
		{"deploy-web", "biller", billing, http.StatusForbidden, `client "biller" may use only the MCP servers billing, not "deploy-web"`},
		{"unnamed", "deployer", deploy, http.StatusForbidden, "has no fixed name to check; its administrator starts it with --name NAME"},
		{"unnamed", "anyone", anyone, http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.gateway+"/"+tc.client, func(t *testing.T) {
			c := &raw{t: t, g: gws[tc.gateway], hd: http.Header{"Authorization": {"Bearer " + tc.bearer}}}
			if code, msg := status(t, c.post(initBody)); code != tc.code || !strings.Contains(msg, tc.says) {
				t.Errorf("got %d %q; want %d saying %q", code, msg, tc.code, tc.says)
			}
		})
	}
}

// TestNamedClientAnswersAreItsOwn: a named client that answers its
// server's question itself (go-sdk's elicitation handler, --route
// client) is recorded by its authenticated name, not by the name its
// initialize gives it.
func TestNamedClientAnswersAreItsOwn(t *testing.T) {
	ids := newIdentities(t)
	cred := ids.add("laptop", time.Time{})
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient), Identities: ids.path})
	w := g.watch()
	cs := goSDKSessionWith(t, g, "claims-to-be-alice", "2025-11-25", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"environment": "staging", "confirm": true}}, nil
		},
	}, cred)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "Laptop deploys?"}})
	if err != nil || !strings.Contains(sdkText(r), `"action":"accept"`) {
		t.Fatalf("tools/call: %v, %v", r, err)
	}
	q := w.question(t, "Laptop deploys?")
	w.waitFor(t, "the answer's record", func(w *watcher) bool { return w.by[q.ID] != "" })
	w.mu.Lock()
	defer w.mu.Unlock()
	if got := w.by[q.ID]; got != "client:laptop" {
		t.Errorf("the client's own answer is by %q; want client:laptop", got)
	}
}

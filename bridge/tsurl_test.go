package bridge

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The TypeScript SDK's elicitationUrlExample.js is a streamable HTTP
// server behind OAuth (its own demo authorization server): once a session
// opens its GET stream, the server asks for an API key with a URL-mode
// elicitation on it. The tests get a token the way a client would
// (dynamic registration, an authorization code with PKCE, the token
// endpoint; the demo server approves every authorization) and front the
// server with --url and --header.

// tsURLServer starts the example and returns its MCP endpoint and a
// bearer token for it.
func tsURLServer(t *testing.T, owner *testing.T) (endpoint, token string) {
	t.Helper()
	js := tsExample(t, "elicitationUrlExample.js")
	mcpPort, authPort := examplePort(t), examplePort(t)
	startHTTPPeer(t, owner, []string{"node", js}, []string{fmt.Sprintf("MCP_PORT=%d", mcpPort), fmt.Sprintf("MCP_AUTH_PORT=%d", authPort)},
		"MCP Streamable HTTP Server listening", "OAuth Authorization Server listening")
	endpoint = fmt.Sprintf("http://localhost:%d/mcp", mcpPort)
	return endpoint, demoToken(t, fmt.Sprintf("http://localhost:%d", authPort), endpoint)
}

// demoToken runs the OAuth authorization code flow with PKCE against the
// TypeScript SDK's demo authorization server.
func demoToken(t *testing.T, auth, resource string) string {
	t.Helper()
	const redirect = "http://localhost/callback"
	var reg struct {
		ClientID string `json:"client_id"`
	}
	postJSON(t, auth+"/register", `{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"response_types":["code"],"client_name":"aep-mcp-bridge tests"}`, &reg)
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect}, "resource": {resource},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "scope": {"mcp:tools"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(auth + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("the demo authorization server answered %s with Location %q; want a redirect with a code", resp.Status, resp.Header.Get("Location"))
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "client_id": {reg.ClientID},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {resource}}
	tr, err := http.PostForm(auth+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(tr.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("the token endpoint answered %s: %v", tr.Status, err)
	}
	return tok.AccessToken
}

func postJSON(t *testing.T, u, body string, out any) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %s %v", u, resp.Status, err)
	}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// tsURLPeer is the URL example as a row of the matrix: its payment-confirm
// tool ends with a -32042 URLElicitationRequiredError listing a URL on
// the server's own loopback address; the bridge raises an auth question
// for it while the error reaches the client. The operator's answer is
// theirs to act on (they open the link); no ElicitResult goes back in
// this flow, as the protocol defines it.
func tsURLPeer(owner *testing.T) *matrixPeer {
	p := &matrixPeer{name: "ts-sdk-url/http", subject: "url-elicitation-http-server", kind: "auth",
		tool: "payment-confirm", args: map[string]any{"cartId": "cart-7"}, callError: -32042, acceptAnswer: "accept",
		invalid: map[string]any{"key": "x"}, invalidRule: "answer: a URL question takes option",
		cannot: map[string]string{"2025-06-18": "URL-mode elicitation is 2025-11-25's: the server cannot ask a 2025-06-18 client for a URL"}}
	var mu sync.Mutex
	var endpoint, token string
	get := func(t *testing.T) (string, string) {
		mu.Lock()
		defer mu.Unlock()
		if endpoint == "" {
			endpoint, token = tsURLServer(t, owner)
		}
		return endpoint, token
	}
	p.launch = func(t *testing.T) (Options, func() [][]byte) {
		e, tok := get(t)
		rp := newRecordingProxy(t, e)
		return Options{URL: rp.url, Header: http.Header{"Authorization": {"Bearer " + tok}}}, rp.received
	}
	p.direct = func(t *testing.T) sdk.Transport {
		e, tok := get(t)
		return &sdk.StreamableClientTransport{Endpoint: e, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}}}
	}
	p.mcpgoDirect = func(t *testing.T) transport.Interface {
		e, tok := get(t)
		tr, err := transport.NewStreamableHTTP(e, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	return p
}

// TestTSURLCompletionResolvesTheQuestion: the example's third-party-auth
// tool lists an https URL in a -32042 error and, five seconds later,
// sends notifications/elicitation/complete for it, as its OAuth callback
// would. The bridge's question for that URL is then resolved (auto) with
// nobody answering it.
func TestTSURLCompletionResolvesTheQuestion(t *testing.T) {
	t.Parallel()
	p := tsURLPeer(t)
	o, _ := p.launch(t)
	s := startSDKSession(t, o, "2025-11-25", nil)
	checkCallError(t, <-s.call("third-party-auth", map[string]any{"param1": "x"}), -32042)
	req := s.next("attention.requested")
	checkQuestion(t, req, p.subject, "auth", nil)
	if !strings.Contains(string(req.Data), "https://www.example.com/oauth/authorize") {
		t.Errorf("the question does not show the URL: %s", req.Data)
	}
	resolved := s.next("attention.resolved")
	var r struct{ Resolution string }
	json.Unmarshal(resolved.Data, &r)
	if resolved.Subject != req.ID || r.Resolution != "auto" {
		t.Errorf("got %s about %s; want the question resolved auto", resolved.Data, resolved.Subject)
	}
}

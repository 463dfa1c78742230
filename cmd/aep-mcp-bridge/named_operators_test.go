package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

const (
	opsToken    = "named-ops-token-0123456789abcdefghijklmnop"
	opsMCPToken = "named-ops-mcp-token-0123456789abcdefghijk"
)

// buildBinary builds the command into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "aep-mcp-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the binary: %v\n%s", err, out)
	}
	return bin
}

var announcedAddr = regexp.MustCompile(`(AEP endpoint|MCP gateway) on http://([0-9.:\[\]a-f]+)`)

// addrOf waits until p announces what (AEP endpoint, MCP gateway) and
// returns its address.
func addrOf(t *testing.T, p *process, what string) string {
	t.Helper()
	p.stderr.waitFor(t, what+" on http://")
	for _, m := range announcedAddr.FindAllStringSubmatch(p.stderr.String(), -1) {
		if m[1] == what {
			return m[2]
		}
	}
	t.Fatalf("no %s address in:\n%s", what, p.stderr.String())
	return ""
}

// addOp runs operators add and returns the credential it printed.
func addOp(t *testing.T, state string, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, append(append([]string{"operators", "add"}, args...), "--state-dir", state)...)
	if code != 0 {
		t.Fatalf("operators add %v: exit %d: %s", args, code, errOut)
	}
	cred := strings.TrimSpace(out)
	if cred != "" && strings.Contains(errOut, cred) {
		t.Fatalf("operators add printed the credential on stderr too")
	}
	return cred
}

// opConn is an operator's WebSocket, subscribed from the start, whose
// every frame is kept.
type opConn struct {
	t      *testing.T
	c      *websocket.Conn
	frames chan []byte
	// mu guards seen.
	mu   sync.Mutex
	seen []string
	// ended closes when the connection ends.
	ended chan struct{}
}

// dialOp dials /socket at addr with credential as the bearer, says hello
// as agent (a claim that proves nothing) and subscribes from the start.
func dialOp(t *testing.T, addr, credential, agent string) *opConn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws://"+addr+"/socket", http.Header{"Authorization": {"Bearer " + credential}})
	if err != nil {
		t.Fatalf("dialing as %s: %v (%v)", agent, err, resp)
	}
	o := &opConn{t: t, c: c, frames: make(chan []byte, 4096), ended: make(chan struct{})}
	t.Cleanup(func() { c.Close(); <-o.ended })
	go o.read()
	o.send(fmt.Sprintf(`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":%q}}`, agent))
	o.await("hello", func(f map[string]any) bool { return f["type"] == "hello" })
	o.send(`{"type":"subscribe","id":"all","from":"all"}`)
	return o
}

func (o *opConn) read() {
	defer close(o.ended)
	defer close(o.frames)
	for {
		_, b, err := o.c.ReadMessage()
		if err != nil {
			return
		}
		o.mu.Lock()
		o.seen = append(o.seen, string(b))
		o.mu.Unlock()
		o.frames <- b
	}
}

func (o *opConn) send(s string) {
	o.t.Helper()
	if err := o.c.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		o.t.Fatal(err)
	}
}

// await reads frames until one satisfies match; 60 s is a failure guard.
func (o *opConn) await(what string, match func(map[string]any) bool) map[string]any {
	o.t.Helper()
	guard := time.After(60 * time.Second)
	for {
		select {
		case b, ok := <-o.frames:
			if !ok {
				o.t.Fatalf("the connection ended before %s", what)
			}
			var f map[string]any
			json.Unmarshal(b, &f)
			if match(f) {
				return f
			}
		case <-guard:
			o.t.Fatalf("no %s within 60s", what)
		}
	}
}

// all returns every frame o received, one a line.
func (o *opConn) all() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.seen, "\n")
}

// sawAny returns a frame o received that mentions any of words, or "".
func (o *opConn) sawAny(words ...string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.seen {
		for _, w := range words {
			if strings.Contains(s, w) {
				return s
			}
		}
	}
	return ""
}

func respond(id, session, question, agent, values string) string {
	return fmt.Sprintf(`{"aep":"0.1","id":%q,"type":"control.attention.respond","subject":%q,"cause":%q,"time":%q,"source":"aep://ops/agent/%s","agent":%q,"session":%q,"data":{"answer":{"values":%s}}}`,
		id, question, question, time.Now().UTC().Format(time.RFC3339), agent, agent, session, values)
}

func dataOf(f map[string]any) map[string]any {
	d, _ := f["data"].(map[string]any)
	return d
}

// sseOp opens GET /stream at addr with credential; lines go to a channel,
// which closes when the stream ends.
func sseOp(t *testing.T, addr, credential, query string) (int, <-chan string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/stream?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+credential)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4096)
	go func() {
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return resp.StatusCode, lines
}

// TestNamedOperatorsOnAHubWithTwoServers runs a hub whose gateway fronts
// deploy-web and a gateway joined to it that fronts billing, as separate
// processes, and four named operators: alice answers deploy-*, carol
// answers billing, bob reads billing. Each sees and answers its own
// server's question only, on every surface; what they answer is recorded
// under their names whatever their commands claim; a revoked operator's
// connections close, saying why, without a request of hers; and no
// credential appears in any log, event, argument or file but the one it
// was printed to.
func TestNamedOperatorsOnAHubWithTwoServers(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	state, logs := filepath.Join(dir, "state"), filepath.Join(dir, "logs")
	creds := map[string]string{
		"alice": addOp(t, state, "alice", "--servers", "deploy-*"),
		"carol": addOp(t, state, "carol", "--servers", "billing"),
		"bob":   addOp(t, state, "bob", "--can", "read", "--servers", "billing"),
	}
	env := []string{"AEP_TOKEN=" + opsToken, "AEP_MCP_TOKEN=" + opsMCPToken}
	common := []string{"--state-dir", state, "--log-dir", logs, "--route", "remote"}
	hub := startProcessEnv(t, env, bin, append(append([]string{"serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--agent", "hub", "--name", "deploy-web"}, common...), "--", bin, "demo-server")...)
	aepAddr, webMCP := addrOf(t, hub, "AEP endpoint"), addrOf(t, hub, "MCP gateway")
	billing := startProcessEnv(t, env, bin, append(append([]string{"serve", "--listen", aepAddr, "--mcp-listen", "127.0.0.1:0", "--agent", "billing-gw", "--name", "billing"}, common...), "--", bin, "demo-server")...)
	billingMCP := addrOf(t, billing, "MCP gateway")

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	results := map[string]chan string{"deploy-web": make(chan string, 1), "billing": make(chan string, 1)}
	for server, addr := range map[string]string{"deploy-web": webMCP, "billing": billingMCP} {
		go func() {
			got, err := deployThrough(ctx, "http://"+addr+"/mcp", opsMCPToken, "client-of-"+server)
			if err != nil {
				got = "error: " + err.Error()
			}
			results[server] <- got
		}()
	}

	// The token's holder sees both questions.
	holder := dialOp(t, aepAddr, opsToken, "holder")
	questions := map[string]map[string]any{}
	for len(questions) < 2 {
		q := holder.await("a question", func(f map[string]any) bool { return f["type"] == "attention.requested" })
		questions[q["subject"].(string)] = q
	}
	web, bill := questions["deploy-web"], questions["billing"]
	webSession, billSession := web["session"].(string), bill["session"].(string)

	alice, carol, bob := dialOp(t, aepAddr, creds["alice"], "mallory"), dialOp(t, aepAddr, creds["carol"], "mallory"), dialOp(t, aepAddr, creds["bob"], "bob")
	alice.await("deploy-web's question", func(f map[string]any) bool { return f["id"] == web["id"] })
	carol.await("billing's question", func(f map[string]any) bool { return f["id"] == bill["id"] })
	bob.await("billing's question", func(f map[string]any) bool { return f["id"] == bill["id"] })
	_, aliceSSE := sseOp(t, aepAddr, creds["alice"], "")

	// pending, with each credential: its own server's question only.
	for who, want := range map[string]string{"alice": "deploy-web", "carol": "billing", "bob": "billing"} {
		out, errOut, code := cli(t, "pending", "--json", "--endpoint", "http://"+aepAddr, "--token", creds[who])
		var qs []struct{ Server string }
		if code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) != 1 || qs[0].Server != want {
			t.Errorf("%s's pending (exit %d): %s %s; want %s's question only", who, code, out, errOut, want)
		}
	}

	// bob may only read: his answer is refused on his own connection,
	// naming his right, and never reaches billing's session (its history
	// and log are checked below).
	bob.send(respond("bob-1", billSession, bill["id"].(string), "bob", `{"service":"bob-was-here"}`))
	rej := bob.await("the refusal of bob's answer", func(f map[string]any) bool { return f["type"] == "error" && f["cause"] == "bob-1" })
	if rej["code"] != "unauthorized" || !strings.Contains(fmt.Sprint(rej["detail"]), `operator "bob" may read, not answer`) {
		t.Errorf("bob's answer was refused with %v; want unauthorized, naming his right", rej)
	}
	// alice out of her scope: refused on her connection, never sent.
	alice.send(respond("alice-1", billSession, bill["id"].(string), "mallory", `{"service":"alice-was-here"}`))
	e := alice.await("the refusal of alice's answer to billing", func(f map[string]any) bool { return f["type"] == "error" && f["cause"] == "alice-1" })
	if e["code"] != "unauthorized" || !strings.Contains(fmt.Sprint(e["detail"]), `operator "alice" reaches the questions of servers deploy-* only`) {
		t.Errorf("alice's answer to billing: %v; want unauthorized, naming her scope", e)
	}
	// Each answers its own, claiming to be mallory: the record says who.
	alice.send(respond("alice-2", webSession, web["id"].(string), "mallory", `{"service":"from-alice"}`))
	carol.send(respond("carol-1", billSession, bill["id"].(string), "mallory", `{"service":"from-carol"}`))
	for _, tc := range []struct {
		o         *opConn
		q         map[string]any
		by, value string
	}{{alice, web, "alice", "from-alice"}, {carol, bill, "carol", "from-carol"}} {
		a := tc.o.await("the answer to "+tc.q["subject"].(string), func(f map[string]any) bool {
			return f["type"] == "attention.answered" && f["subject"] == tc.q["id"]
		})
		if dataOf(a)["by"] != tc.by || dataOf(a)["via"] != "control" {
			t.Errorf("%s's question was answered by %v via %v; want %s, whatever the command claimed", tc.q["subject"], dataOf(a)["by"], dataOf(a)["via"], tc.by)
		}
		select {
		case got := <-results[tc.q["subject"].(string)]:
			if !strings.Contains(got, `"service":"`+tc.value+`"`) {
				t.Errorf("%s's server received %s; want %s's answer", tc.q["subject"], got, tc.by)
			}
		case <-ctx.Done():
			t.Fatalf("%s's client never got its result", tc.q["subject"])
		}
	}
	// The session logs keep who answered.
	for server, by := range map[string]string{"hub": "alice", "billing-gw": "carol"} {
		files, _ := filepath.Glob(filepath.Join(logs, server, "*.jsonl"))
		var found bool
		for _, f := range files {
			b, _ := os.ReadFile(f)
			found = found || strings.Contains(string(b), `"type":"attention.answered"`) && strings.Contains(string(b), `"by":"`+by+`"`)
		}
		if !found {
			t.Errorf("%s's session log does not record %s's answer (files %v)", server, by, files)
		}
	}
	// bob's refused answer is in no log: it never reached a session.
	files, _ := filepath.Glob(filepath.Join(logs, "*", "*.jsonl"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "bob-1") {
			t.Errorf("the session log %s records bob's refused command bob-1", f)
		}
	}

	// The other's questions never reached them: live, and in a fresh
	// replay over the WebSocket and SSE.
	for who, other := range map[string][]string{
		"alice": {billSession, bill["id"].(string)},
		"carol": {webSession, web["id"].(string)},
		"bob":   {webSession, web["id"].(string)},
	} {
		o := map[string]*opConn{"alice": alice, "carol": carol, "bob": bob}[who]
		if f := o.sawAny(other...); f != "" {
			t.Errorf("%s received another server's event: %s", who, f)
		}
		again := dialOp(t, aepAddr, creds[who], who)
		again.send(`{"type":"ping","t":"end"}`)
		again.await("the end of the replay", func(f map[string]any) bool { return f["type"] == "pong" })
		if f := again.sawAny(other...); f != "" {
			t.Errorf("%s's replay holds another server's event: %s", who, f)
		}
		code, lines := sseOp(t, aepAddr, creds[who], "live=0&from=all")
		var n int
		for line := range lines {
			n++
			for _, w := range other {
				if strings.Contains(line, w) {
					t.Errorf("%s's SSE replay holds another server's event: %s", who, line)
				}
			}
		}
		if code != 200 || n == 0 {
			t.Errorf("%s's SSE replay: %d, %d lines", who, code, n)
		}
	}

	// Revoking alice closes her WebSocket and SSE stream, each saying
	// why, and her next request is refused. The bridge looks at the
	// identities file every 200 ms, so they close well within a second on
	// a quiet machine; a loaded one can delay any process by more than
	// that, so the test waits for the closes themselves, each of which
	// names the revocation, and 60 s only guards against a failure. The
	// time taken is logged.
	if _, errOut, code := cli(t, "operators", "revoke", "alice", "--state-dir", state); code != 0 {
		t.Fatalf("operators revoke: %s", errOut)
	}
	revoked := time.Now()
	guard := time.After(60 * time.Second)
	select {
	case <-alice.ended:
		if f := alice.sawAny(`"type":"closing"`); !strings.Contains(f, "access revoked") {
			t.Errorf("alice's WebSocket closed without saying why: %q", f)
		}
	case <-guard:
		t.Fatalf("alice's WebSocket was still open 60 s after the revocation")
	}
	var last string
	for sseEnded := false; !sseEnded; {
		select {
		case line, ok := <-aliceSSE:
			if sseEnded = !ok; ok && line != "" {
				last = line
			}
		case <-guard:
			t.Fatalf("alice's SSE stream was still open 60 s after the revocation")
		}
	}
	if !strings.HasPrefix(last, ": closing") || !strings.Contains(last, "access revoked") {
		t.Errorf("alice's SSE stream ended with %q; want a closing comment naming the revocation", last)
	}
	t.Logf("alice's connections closed %v after the revocation", time.Since(revoked).Round(time.Millisecond))
	if code, _ := sseOp(t, aepAddr, creds["alice"], "live=0"); code != http.StatusUnauthorized {
		t.Errorf("alice's next request: %d; want 401", code)
	}

	// No credential anywhere but where it was printed.
	var places []string
	places = append(places, hub.stderr.String(), billing.stderr.String(), holder.all())
	for _, p := range []*process{hub, billing} {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.cmd.Process.Pid)); err == nil {
			places = append(places, string(b))
		}
	}
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && path != bin {
			b, _ := os.ReadFile(path)
			places = append(places, string(b))
		}
		return nil
	})
	for who, cred := range creds {
		secret := cred[len(identity.PrefixOperator)+identity.IDLen:]
		for i, p := range places {
			if strings.Contains(p, cred) || strings.Contains(p, secret) {
				t.Errorf("%s's credential is in place %d (stderr, events, arguments or a file of the state and logs)", who, i)
			}
		}
	}
	if doc, err := os.ReadFile(filepath.Join(state, "identities.json")); err != nil || !strings.Contains(string(doc), `"hash"`) {
		t.Errorf("the identities file holds no hashes: %v", err)
	}
}

// TestTrustedProxyHeaderFromARealPeer runs two bridges behind a pretend
// authenticating proxy on loopback: one that trusts 10.0.0.0/8, where the
// request's peer, 127.0.0.1, is outside (the header is ignored and
// logged, without its value), and one that trusts 127.0.0.1, where the
// header names the operator, with its record's scope.
func TestTrustedProxyHeaderFromARealPeer(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	state := filepath.Join(dir, "state")
	if cred := addOp(t, state, "dave@example.org", "--proxy", "--servers", "billing"); cred != "" {
		t.Fatalf("a proxy operator got a credential: %q", cred)
	}
	env := []string{"AEP_TOKEN=" + opsToken, "AEP_MCP_TOKEN=" + opsMCPToken}
	start := func(trusted string) (*process, string) {
		p := startProcessEnv(t, env, bin, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off",
			"--operator-header", "X-Forwarded-User", "--trusted-proxy", trusted, "--", bin, "demo-server")
		return p, addrOf(t, p, "AEP endpoint")
	}
	get := func(addr string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/stream?live=0", nil)
		req.Header.Set("X-Forwarded-User", "dave@example.org")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	outside, outsideAddr := start("10.0.0.0/8")
	if code := get(outsideAddr); code != http.StatusUnauthorized {
		t.Errorf("the header from 127.0.0.1, outside 10.0.0.0/8: %d; want 401", code)
	}
	outside.stderr.waitFor(t, "ignored the operator header")
	for _, line := range strings.Split(outside.stderr.String(), "\n") {
		if strings.Contains(line, "ignored the operator header") && (!strings.Contains(line, "peer=127.0.0.1") || strings.Contains(line, "dave")) {
			t.Errorf("the log line names the peer %v, and the header's value %v: %s", strings.Contains(line, "peer=127.0.0.1"), strings.Contains(line, "dave"), line)
		}
	}

	_, insideAddr := start("127.0.0.1")
	if code := get(insideAddr); code != http.StatusOK {
		t.Fatalf("the header from 127.0.0.1, trusted: %d; want 200", code)
	}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+insideAddr+"/socket", http.Header{"X-Forwarded-User": {"dave@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := &opConn{t: t, c: c, frames: make(chan []byte, 64), ended: make(chan struct{})}
	go o.read()
	o.send(`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"someone"}}`)
	o.await("hello", func(f map[string]any) bool { return f["type"] == "hello" })
	o.send(respond("d1", "no-such-session", "q", "someone", `{}`))
	e := o.await("the refusal", func(f map[string]any) bool { return f["type"] == "error" && f["cause"] == "d1" })
	if !strings.Contains(fmt.Sprint(e["detail"]), `operator "dave@example.org" reaches the questions of servers billing only`) {
		t.Errorf("the proxy's name did not make the connection dave's: %v", e)
	}
	c.Close()
	<-o.ended
}

func TestOperatorsCommand(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	cred := addOp(t, state, "alice", "--can", "read", "--servers", "deploy-*,billing", "--expires", "30d")
	if _, err := identity.ParseCredential(cred); err != nil {
		t.Fatalf("operators add printed %q; want one credential line", cred)
	}
	addOp(t, state, "sso@corp.example", "--proxy", "--group", "sre", "--group", "oncall,sre")
	out, _, code := cli(t, "operators", "list", "--state-dir", state)
	if code != 0 || !regexp.MustCompile(`alice\s+read\s+deploy-\*,billing\s+-\s+credential\s+\S+ \S+\s+-\s+\S+ \S+`).MatchString(out) ||
		!regexp.MustCompile(`sso@corp\.example\s+answer\s+\*\s+oncall,sre\s+proxy`).MatchString(out) || strings.Contains(out, cred) {
		t.Fatalf("operators list (exit %d):\n%s", code, out)
	}
	out, _, _ = cli(t, "operators", "list", "--json", "--state-dir", state)
	var list []struct {
		Auth   string   `json:"auth"`
		Groups []string `json:"groups"`
	}
	if json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || !strings.Contains(out, `"expires"`) || list[1].Auth != "proxy" || strings.Contains(out, "hash") ||
		list[0].Groups == nil || len(list[0].Groups) != 0 || strings.Join(list[1].Groups, " ") != "oncall sre" {
		t.Fatalf("operators list --json:\n%s", out)
	}
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no subcommand", []string{"operators"}, exitUsage, "give a subcommand"},
		{"an unknown subcommand", []string{"operators", "rename"}, exitUsage, `"rename" is not a subcommand`},
		{"no name", []string{"operators", "add"}, exitUsage, "give the operator's NAME"},
		{"a bad name", []string{"operators", "add", "a:b"}, exitUsage, "use letters, digits"},
		{"a bad right", []string{"operators", "add", "x", "--can", "admin"}, exitUsage, `--can: "admin" is not a right`},
		{"a bad glob", []string{"operators", "add", "x", "--servers", "[a"}, exitUsage, "--servers: server pattern"},
		{"a bad group", []string{"operators", "add", "x", "--group", "group:sre"}, exitUsage, `--group: group "group:sre": the group name holds ':'`},
		{"a past expiry", []string{"operators", "add", "x", "--expires", "2001-01-01"}, exitUsage, "not in the future"},
		{"a name taken", []string{"operators", "add", "alice"}, exitFailure, `an operator named "alice" exists`},
		{"revoking nobody", []string{"operators", "revoke", "nobody"}, exitFailure, `no operator is named "nobody"`},
		{"a stray argument", []string{"operators", "revoke", "alice", "bob"}, exitUsage, `unexpected argument "bob"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if len(args) > 1 {
				args = append(args, "--state-dir", state)
			}
			_, errOut, code := cli(t, args...)
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Fatalf("exit %d, %q; want %d saying %q", code, errOut, tc.code, tc.says)
			}
		})
	}
	if _, _, code := cli(t, "operators", "revoke", "alice", "--state-dir", state); code != 0 {
		t.Fatalf("revoke: exit %d", code)
	}
	if out, _, _ := cli(t, "operators", "list", "--state-dir", state); strings.Contains(out, "alice") {
		t.Errorf("alice is still listed:\n%s", out)
	}
	for _, args := range [][]string{{"operators", "--help"}, {"help", "operators"}, {"operators", "add", "--help"}} {
		if out, _, code := cli(t, args...); code != 0 || !strings.Contains(out, "usage: aep-mcp-bridge operators") {
			t.Errorf("%v: exit %d:\n%s", args, code, out)
		}
	}
}

func TestOperatorHeaderNeedsTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--operator-header", "X-Forwarded-User", "--", "cat"},
		{"--trusted-proxy", "10.0.0.0/8", "--", "cat"},
		{"--operator-header", "X-Forwarded-User", "--trusted-proxy", "10.1.2.3/8", "--", "cat"},
	} {
		_, errOut, code := cli(t, append([]string{"--log-dir", "off", "--state-dir", t.TempDir()}, args...)...)
		if code != exitUsage || !(strings.Contains(errOut, "go together") || strings.Contains(errOut, "host bits")) {
			t.Errorf("%v: exit %d, %q; want a usage error", args, code, errOut)
		}
	}
}

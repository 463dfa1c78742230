package endpoint

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// opsFixture is an endpoint with two local sessions, "web" of server
// deploy-web and "bill" of server billing, each with a question open, and
// named operators: alice answers deploy-*, bob reads billing, carol
// answers everything but only behind the trusted proxy.
type opsFixture struct {
	srv       *httptest.Server
	ep        *Endpoint
	web, bill *bus.Emitter
	webQ      aep.Event
	billQ     aep.Event
	tgWeb     *recordingTarget
	tgBill    *recordingTarget
	doc       *identity.Document
	creds     map[string]string
	logs      *testenv.Buffer
}

// testPeerHeader carries the TCP peer a test wants a request to come from
// (the peer seam): loopback tests cannot come from elsewhere.
const testPeerHeader = "X-Test-Peer"

func addOperator(t *testing.T, d *identity.Document, name string, can identity.Right, proxy bool, servers ...string) string {
	t.Helper()
	s, err := identity.ParseScope(servers)
	if err != nil {
		t.Fatal(err)
	}
	o := identity.Operator{Name: name, Can: can, Servers: s, Created: time.Now(), Proxy: proxy}
	var text string
	if !proxy {
		var v identity.Verifier
		text, v, err = identity.NewCredential(identity.KindOperator, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		o.Credential = &v
	}
	if err := d.AddOperator(o); err != nil {
		t.Fatal(err)
	}
	return text
}

// newOpsFixture builds the fixture over a hub with ho (one at most; the
// defaults without).
func newOpsFixture(t *testing.T, ho ...bus.HubOptions) *opsFixture {
	t.Helper()
	f := &opsFixture{tgWeb: &recordingTarget{}, tgBill: &recordingTarget{}, doc: &identity.Document{}, creds: map[string]string{}, logs: &testenv.Buffer{}}
	f.creds["alice"] = addOperator(t, f.doc, "alice", identity.Answer, false, "deploy-*")
	f.creds["bob"] = addOperator(t, f.doc, "bob", identity.Read, false, "billing")
	addOperator(t, f.doc, "carol", identity.Answer, true)
	hub := bus.NewHubWith(append(ho, bus.HubOptions{})[0])
	var err error
	if f.web, err = bus.NewEmitter(bus.EmitterOptions{Agent: "bridge", Session: "web", Host: "h", Sinks: []bus.Sink{hub}}); err != nil {
		t.Fatal(err)
	}
	if f.bill, err = bus.NewEmitter(bus.EmitterOptions{Agent: "bridge", Session: "bill", Host: "h", Sinks: []bus.Sink{hub}}); err != nil {
		t.Fatal(err)
	}
	proxies, _ := ParseProxies("10.0.0.0/8")
	f.ep, err = New(Options{Token: testToken, Hub: hub, Operators: identity.NewDirectory(f.doc), OperatorHeader: "X-Forwarded-User", TrustedProxies: proxies,
		Logger: slog.New(slog.NewTextHandler(f.logs, nil)),
		peer: func(r *http.Request) netip.Addr {
			if a, err := netip.ParseAddr(r.Header.Get(testPeerHeader)); err == nil {
				return a
			}
			return peerOf(r)
		}})
	if err != nil {
		t.Fatal(err)
	}
	accepts := []string{"control.attention.respond"}
	f.ep.AddClaim(Claim{Session: "web", Source: f.web.Source(), Agent: "bridge", Accepts: accepts, Target: f.tgWeb})
	f.ep.AddClaim(Claim{Session: "bill", Source: f.bill.Source(), Agent: "bridge", Accepts: accepts, Target: f.tgBill})
	emit(t, f.web, "session.started", nil)
	emit(t, f.bill, "session.started", nil)
	f.webQ = emit(t, f.web, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: "deploy?"}, "deploy-web")
	f.billQ = emit(t, f.bill, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: "refund?"}, "billing")
	f.srv = httptest.NewServer(f.ep.Handler())
	t.Cleanup(func() { f.ep.Close(); f.srv.Close() })
	return f
}

// dialAs dials /socket with header h and says hello as a consumer.
func (f *opsFixture) dialAs(t *testing.T, h http.Header) *wsClient {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/socket", h)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { c.Close() })
	w := &wsClient{t, c}
	w.hello()
	return w
}

func bearerHeader(credential string) http.Header {
	return http.Header{"Authorization": {"Bearer " + credential}}
}

// subscribeAll subscribes to every event from the start and returns the
// ids of the backlog: the subscribed frame's counts say how many.
func (w *wsClient) subscribeAll() []string {
	w.t.Helper()
	w.send(`{"type":"subscribe","id":"all","from":"all"}`)
	f := w.read()
	if f["type"] != "subscribed" {
		w.t.Fatalf("got %v; want subscribed", f)
	}
	n := int(f["open"].(float64) + f["replay"].(float64))
	var ids []string
	for range n {
		ids = append(ids, fmt.Sprint(w.read()["id"]))
	}
	return ids
}

// sseAs reads GET /stream?live=0&from=all with header h whole, and
// returns the ids of its events.
func (f *opsFixture) sseAs(t *testing.T, h http.Header) (int, []string) {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+"/stream?live=0&from=all", nil)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ids []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev aep.Event
			json.Unmarshal([]byte(data), &ev)
			ids = append(ids, ev.ID)
		}
	}
	return resp.StatusCode, ids
}

func TestOperatorsSeeOnlyTheirScope(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	sessionOf := func(ids []string) map[string]bool {
		out := map[string]bool{}
		for _, id := range ids {
			switch id {
			case f.webQ.ID:
				out["web question"] = true
			case f.billQ.ID:
				out["bill question"] = true
			}
		}
		return out
	}
	// The token's holder sees both; alice deploy-web's only; bob billing's.
	for _, tc := range []struct {
		who  string
		h    http.Header
		want string
	}{
		{"the token's holder", bearerHeader(testToken), "map[bill question:true web question:true]"},
		{"alice", bearerHeader(f.creds["alice"]), "map[web question:true]"},
		{"bob", http.Header{}, "map[bill question:true]"},
	} {
		h := tc.h
		if tc.who == "bob" {
			h = bearerHeader(f.creds["bob"])
		}
		ws := f.dialAs(t, h).subscribeAll()
		if got := fmt.Sprint(sessionOf(ws)); got != tc.want {
			t.Errorf("%s over the WebSocket saw %s; want %s", tc.who, got, tc.want)
		}
		code, sse := f.sseAs(t, h)
		if got := fmt.Sprint(sessionOf(sse)); code != 200 || got != tc.want {
			t.Errorf("%s over SSE (%d) saw %s; want %s", tc.who, code, got, tc.want)
		}
		if tc.who != "the token's holder" && len(ws) != 2 {
			t.Errorf("%s saw %d events; want its session's start and question only: %v", tc.who, len(ws), ws)
		}
	}
	// Live: billing's new question never reaches alice; deploy-web's next
	// event is the next thing she reads.
	alice := f.dialAs(t, bearerHeader(f.creds["alice"]))
	alice.send(`{"type":"subscribe","id":"live","filter":{"type":["attention.*"]}}`)
	alice.read() // subscribed
	alice.read() // the open question of deploy-web
	emit(t, f.bill, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: "another refund?"}, "billing")
	next := emit(t, f.web, "attention.timeout", aep.AttentionTimeout{AfterMS: 1}, f.webQ.ID)
	if got := alice.read(); got["id"] != next.ID {
		t.Fatalf("alice read %v; want deploy-web's timeout, nothing of billing's", got)
	}
	// The roster tells alice of deploy-web's session only.
	alice.send(`{"type":"roster","id":"r"}`)
	r := alice.read()
	if entries := r["entries"].([]any); len(entries) != 1 || entries[0].(map[string]any)["session"] != "web" {
		t.Errorf("alice's roster: %v; want the web session only", r)
	}
}

// respondFrame is a control.attention.respond of question q in session,
// whose agent claims to be claimed.
func respondFrame(id, session, q, claimed string) string {
	return fmt.Sprintf(`{"aep":"0.1","id":%q,"type":"control.attention.respond","subject":%q,"time":"2026-01-01T00:00:00Z","source":"aep://x/agent/%s","agent":%q,"session":%q,"data":{"answer":{"option":"decline"}}}`,
		id, q, claimed, claimed, session)
}

func TestOperatorCommands(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	alice := f.dialAs(t, bearerHeader(f.creds["alice"]))
	// Out of scope: refused on the connection, naming her scope, never
	// reaching billing's session.
	alice.send(respondFrame("C1", "bill", f.billQ.ID, "alice"))
	if e := alice.read(); e["type"] != "error" || e["code"] != "unauthorized" || e["cause"] != "C1" ||
		!strings.Contains(e["detail"].(string), `operator "alice" reaches the questions of servers deploy-* only`) {
		t.Fatalf("alice answering billing: %v; want an unauthorized error naming her scope", e)
	}
	// In scope: routed with her name, whatever the command's agent says.
	alice.send(respondFrame("C2", "web", f.webQ.ID, "mallory"))
	alice.send(`{"type":"ping","t":"C2"}`) // answered after C2 is routed: frames are taken in order
	if p := alice.read(); p["type"] != "pong" {
		t.Fatalf("got %v; want the pong after C2", p)
	}
	bob := f.dialAs(t, bearerHeader(f.creds["bob"]))
	// A reader in scope: refused on its own connection, naming its right,
	// every time; none of it reaches the session (whose history it would
	// fill with a command and a rejection each).
	for i := range 3 {
		id := fmt.Sprintf("C3-%d", i)
		bob.send(respondFrame(id, "bill", f.billQ.ID, "bob"))
		if e := bob.read(); e["type"] != "error" || e["code"] != "unauthorized" || e["cause"] != id ||
			!strings.Contains(fmt.Sprint(e["detail"]), `operator "bob" may read, not answer: its right is read`) {
			t.Fatalf("bob answering billing: %v; want an unauthorized error naming his right", e)
		}
	}
	// A reader out of scope: refused here.
	bob.send(respondFrame("C4", "web", f.webQ.ID, "bob"))
	if e := bob.read(); e["code"] != "unauthorized" || e["cause"] != "C4" {
		t.Fatalf("bob answering deploy-web: %v; want unauthorized", e)
	}
	for _, tc := range []struct {
		tg   *recordingTarget
		want string
	}{{f.tgWeb, "[{true alice [] false}]"}, {f.tgBill, "[]"}} {
		tc.tg.mu.Lock()
		got := fmt.Sprint(tc.tg.froms)
		tc.tg.mu.Unlock()
		if got != tc.want {
			t.Errorf("the session was sent commands from %s; want %s", got, tc.want)
		}
	}
	// The token's holder is named as such.
	tok := f.dialAs(t, bearerHeader(testToken))
	tok.send(respondFrame("C5", "web", f.webQ.ID, "alice"))
	tok.send(`{"type":"ping","t":1}`)
	tok.read()
	f.tgWeb.mu.Lock()
	last := f.tgWeb.froms[len(f.tgWeb.froms)-1]
	f.tgWeb.mu.Unlock()
	if last.By != "token holder" {
		t.Errorf("the token's holder's command was sent as %+v; want by token holder", last)
	}
	// Operators never emit.
	if e := alice.sendEvent(remoteEvent(f.web.Source(), "web", "E1", "attention.requested", "x", 99)); e == nil || e["code"] != "unauthorized" ||
		!strings.Contains(e["detail"].(string), "never emit") {
		t.Errorf("alice's event: %v; want unauthorized", e)
	}
}

// TestReplayExhaustedOnlyOfSessionsInScope: a resume position older than
// the buffer is reported (replay-exhausted) only for the sessions the
// operator sees, on SSE and the WebSocket: naming another server's session
// there would tell that it exists.
func TestReplayExhaustedOnlyOfSessionsInScope(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t, bus.HubOptions{ReplayPerSession: 2})
	for range 3 { // evicts each session's start and question from replay
		emit(t, f.web, "progress.status", map[string]any{"phase": "p"})
		emit(t, f.bill, "progress.status", map[string]any{"phase": "p"})
	}
	from := `[{"session":"bill","epoch":0,"seq":0},{"session":"web","epoch":0,"seq":0}]`
	for who, want := range map[string]string{"alice": "web", "bob": "bill", "token": "bill web"} {
		cred := f.creds[who]
		if who == "token" {
			cred = testToken
		}
		req, _ := http.NewRequest("GET", f.srv.URL+"/stream?live=0&from="+url.QueryEscape(from), nil)
		req.Header = bearerHeader(cred)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var sse []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), ": replay-exhausted "); ok {
				sse = append(sse, strings.Fields(rest)[0])
			}
		}
		resp.Body.Close()

		c := f.dialAs(t, bearerHeader(cred))
		c.send(`{"type":"subscribe","id":"r","from":` + from + `}`)
		if s := c.read(); s["type"] != "subscribed" {
			t.Fatalf("%s's subscribe: %v", who, s)
		}
		c.send(`{"type":"ping","t":"end"}`) // answered after the subscription's frames
		var ws []string
		for fr := c.read(); fr["type"] != "pong"; fr = c.read() {
			if fr["type"] == "replay-exhausted" {
				ws = append(ws, fmt.Sprint(fr["session"]))
			}
		}
		slices.Sort(sse)
		slices.Sort(ws)
		if got := strings.Join(sse, " "); got != want {
			t.Errorf("%s's SSE stream reported replay-exhausted of %q; want %q", who, got, want)
		}
		if got := strings.Join(ws, " "); got != want {
			t.Errorf("%s's WebSocket reported replay-exhausted of %q; want %q", who, got, want)
		}
	}
}

// TestRevokedOperatorIsCutOff: SetOperators without alice closes her open
// WebSocket (a closing frame, then the close) and SSE stream (a closing
// comment, then the end), and refuses her next request.
func TestRevokedOperatorIsCutOff(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	alice := f.dialAs(t, bearerHeader(f.creds["alice"]))
	req, _ := http.NewRequest("GET", f.srv.URL+"/stream", nil)
	req.Header = bearerHeader(f.creds["alice"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sse := bufio.NewReader(resp.Body)
	for line, _ := sse.ReadString('\n'); !strings.HasPrefix(line, ": subscribed"); line, _ = sse.ReadString('\n') {
	}
	for f.ep.operatorStreams() != 2 {
		// The socket registers after its upgrade; hello's reply came
		// after, so this loop ends at once: it guards the count only.
		alice.send(`{"type":"ping"}`)
		alice.read()
	}
	f.doc.RemoveOperator("alice")
	f.ep.SetOperators(identity.NewDirectory(f.doc))

	closed := false
	alice.c.SetReadDeadline(time.Now().Add(readGuard))
	for {
		_, b, err := alice.c.ReadMessage()
		if err != nil {
			break
		}
		if strings.Contains(string(b), `"type":"closing"`) && strings.Contains(string(b), `operator \"alice\": access revoked or changed`) {
			closed = true
		}
	}
	if !closed {
		t.Errorf("alice's WebSocket ended without a closing frame saying why")
	}
	rest, _ := readAll(sse)
	if !strings.Contains(rest, `: closing: operator "alice": access revoked or changed`) {
		t.Errorf("alice's SSE stream ended with %q; want a closing comment", rest)
	}
	if code, _ := f.sseAs(t, bearerHeader(f.creds["alice"])); code != http.StatusUnauthorized {
		t.Errorf("alice's next request: %d; want 401", code)
	}
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/socket?access_token="+f.creds["alice"], nil); err == nil || resp.StatusCode != 401 {
		t.Errorf("alice's next WebSocket: %v; want 401", err)
	}
	if n := f.ep.operatorStreams(); n != 0 {
		t.Errorf("%d operator streams still tracked", n)
	}
	if strings.Contains(f.logs.String(), f.creds["alice"]) {
		t.Errorf("the log holds alice's credential")
	}
}

func readAll(r *bufio.Reader) (string, error) {
	var b strings.Builder
	_, err := r.WriteTo(&b)
	return b.String(), err
}

// TestExpiredOperatorIsCutOff: an operator whose record expires while
// connected is closed at its expiry.
func TestExpiredOperatorIsCutOff(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	text, v, _ := identity.NewCredential(identity.KindOperator, rand.Reader)
	f.doc.AddOperator(identity.Operator{Name: "temp", Can: identity.Read, Credential: &v, Expires: time.Now().Add(300 * time.Millisecond)})
	f.ep.SetOperators(identity.NewDirectory(f.doc))
	temp := f.dialAs(t, bearerHeader(text))
	temp.c.SetReadDeadline(time.Now().Add(readGuard))
	for {
		_, b, err := temp.c.ReadMessage()
		if err != nil {
			t.Fatalf("the connection ended without a closing frame: %v", err)
		}
		if strings.Contains(string(b), `access expired`) {
			return
		}
	}
}

func TestTrustedProxyHeader(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	tests := []struct {
		name   string
		peer   string
		values []string
		bearer string
		want   int
	}{
		{"from a trusted proxy, a proxy operator", "10.1.2.3", []string{"carol"}, "", 200},
		{"an IPv4 peer written as IPv6", "::ffff:10.1.2.3", []string{"carol"}, "", 200},
		{"from outside: ignored, nothing else", "192.168.1.9", []string{"carol"}, "", 401},
		{"from outside with the token: the token's holder", "192.168.1.9", []string{"carol"}, testToken, 200},
		{"from loopback, outside 10/8", "127.0.0.1", []string{"carol"}, "", 401},
		{"a name no operator has", "10.1.2.3", []string{"dave"}, "", 401},
		{"an operator with a credential", "10.1.2.3", []string{"alice"}, "", 401},
		{"the header twice", "10.1.2.3", []string{"carol", "carol"}, "", 401},
		{"not a name", "10.1.2.3", []string{"carol; admin"}, "", 401},
		{"a trusted peer without the header: the bearer", "10.1.2.3", nil, f.creds["alice"], 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", f.srv.URL+"/stream?live=0", nil)
			req.Header.Set(testPeerHeader, tc.peer)
			for _, v := range tc.values {
				req.Header.Add("X-Forwarded-User", v)
			}
			if tc.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d; want %d", resp.StatusCode, tc.want)
			}
		})
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "ignored the operator header") || !strings.Contains(logs, "peer=192.168.1.9") {
		t.Errorf("the untrusted header was not logged with its peer:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "ignored the operator header") && strings.Contains(line, "carol") {
			t.Errorf("the log shows the untrusted header's value: %s", line)
		}
	}
	// carol, behind the proxy, sees and answers everything.
	h := http.Header{testPeerHeader: {"10.9.9.9"}, "X-Forwarded-User": {"carol"}}
	carol := f.dialAs(t, h)
	carol.send(respondFrame("P1", "bill", f.billQ.ID, "someone-else"))
	carol.send(`{"type":"ping","t":1}`)
	carol.read()
	f.tgBill.mu.Lock()
	defer f.tgBill.mu.Unlock()
	if fmt.Sprint(f.tgBill.froms) != "[{true carol [] false}]" {
		t.Errorf("carol's command was sent as %v; want by carol", f.tgBill.froms)
	}
}

func TestNewRefusesAHeaderWithoutProxies(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{Token: testToken, Hub: bus.NewHub(), OperatorHeader: "X-Forwarded-User"},
		{Token: testToken, Hub: bus.NewHub(), OperatorHeader: "authorization", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%q, %v): no error", o.OperatorHeader, o.TrustedProxies)
		}
	}
}

// TestSendersReachEmittersThatHonourThem: an emitter whose hello
// advertises sender frames gets one naming who sent each command, just
// before it; one that does not gets the command bare. A read-only
// operator's command reaches neither: its own connection refuses it.
func TestSendersReachEmittersThatHonourThem(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	for _, honours := range []bool{true, false} {
		em := dial(t, f.srv)
		hello := emitterHello("e", fmt.Sprint(honours), "")
		if honours {
			hello = strings.Replace(hello, `"capabilities":{`, `"capabilities":{"experimental":{"aep-mcp-bridge-senders":{"versions":[1]}},`, 1)
		}
		em.send(hello)
		if h := em.read(); !aep.AdvertisesSenders(mustJSON(h["capabilities"].(map[string]any)["experimental"])) {
			t.Fatalf("the endpoint's hello does not advertise sender frames: %v", h)
		}
		session := fmt.Sprintf("ext-%v", honours)
		source := "aep://x/agent/e/session/" + session
		if e := em.sendEvent(remoteEvent(source, session, "Q-"+session, "attention.requested", "billing", 0)); e != nil {
			t.Fatalf("the emitter's question: %v", e)
		}
		bob := f.dialAs(t, bearerHeader(f.creds["bob"]))
		bob.send(respondFrame("B-"+session, session, "Q-"+session, "bob"))
		if e := bob.read(); e["code"] != "unauthorized" || e["cause"] != "B-"+session ||
			!strings.Contains(fmt.Sprint(e["detail"]), "may read, not answer") {
			t.Fatalf("bob's command: %v; want unauthorized on his connection, naming his right", e)
		}
		tok := f.dialAs(t, bearerHeader(testToken))
		tok.send(respondFrame("T-"+session, session, "Q-"+session, "mallory"))
		if honours {
			s, ok := aep.DecodeSender([]byte(mustJSON(em.read())))
			if !ok || s.By != "token holder" || s.ReadOnly || s.Cause != "T-"+session {
				t.Fatalf("the emitter got the sender frame %+v (%v); want the token holder's, for T-%s", s, ok, session)
			}
		}
		// The next frame is the token holder's command: bob's never came.
		if cmd := em.read(); cmd["id"] != "T-"+session {
			t.Fatalf("the emitter got %v; want the token holder's command, and nothing of bob's", cmd)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestParseProxies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, says string
	}{
		{"10.0.0.0/8", "[10.0.0.0/8]", ""},
		{"10.0.0.0/8, 192.168.1.7 ,::1", "[10.0.0.0/8 192.168.1.7/32 ::1/128]", ""},
		{"::ffff:10.0.0.0/104", "[10.0.0.0/8]", ""},
		{"::ffff:10.1.2.3", "[10.1.2.3/32]", ""},
		{"10.1.2.3/8", "", "has host bits set; write 10.0.0.0/8"},
		{"example.org", "", `"example.org" is not an address`},
		{"10.0.0.0/33", "", "is not a CIDR"},
		{"fe80::1%eth0", "", "is not an address"},
		{" , ", "", "the list is empty"},
	}
	for _, tc := range tests {
		got, err := ParseProxies(tc.in)
		switch {
		case tc.says != "":
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ParseProxies(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.says)
			}
		case err != nil || fmt.Sprint(got) != tc.want:
			t.Errorf("ParseProxies(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	p, _ := ParseProxies("10.0.0.0/8,2001:db8::/32")
	for addr, want := range map[string]bool{"10.255.0.1": true, "::ffff:10.0.0.1": true, "11.0.0.1": false, "2001:db8::5": true, "2001:db9::5": false, "127.0.0.1": false} {
		if got := trusted(p, netip.MustParseAddr(addr)); got != want {
			t.Errorf("trusted(%s) = %v; want %v", addr, got, want)
		}
	}
	if trusted(p, netip.Addr{}) {
		t.Errorf("an unknown peer is trusted")
	}
}

// FuzzParseProxies: a list parses into base-address prefixes that hold
// what they say, or is refused; nothing panics.
func FuzzParseProxies(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "::1,127.0.0.1", "::ffff:1.2.3.0/120", "1.2.3.4/8", ",", "a/b", "0.0.0.0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		ps, err := ParseProxies(list)
		if err != nil {
			return
		}
		for _, p := range ps {
			if !p.IsValid() || p.Masked() != p || p.Addr().Is4In6() || !trusted([]netip.Prefix{p}, p.Addr()) {
				t.Fatalf("ParseProxies(%q) gave %v", list, p)
			}
		}
	})
}

// FuzzProxyName: a header's values name an operator only when there is
// exactly one and it is a valid name.
func FuzzProxyName(f *testing.F) {
	for _, s := range []string{"carol", "carol@example.org", "", "a b", "x\r\ny", "é"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, v string, twice bool) {
		values := []string{v}
		if twice {
			values = append(values, v)
		}
		name, err := proxyName(values)
		switch {
		case twice && err == nil:
			t.Fatalf("two values accepted")
		case err == nil && (name != v || identity.ValidName(name) != nil):
			t.Fatalf("proxyName(%q) = %q", v, name)
		case err != nil && len(v) >= 8 && strings.Contains(err.Error(), v):
			t.Fatalf("the error quotes the header's value: %v", err)
		}
	})
}

// TestOperatorCommandLineProvesItsCredential: the operators' command line
// reaches the endpoint with a credential by proving it at /join, as the
// token's holder proves the token, and sees its scope only; a revoked
// credential is refused without being sent.
func TestOperatorCommandLineProvesItsCredential(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), readGuard)
	defer cancel()
	for who, want := range map[string]string{"alice": f.webQ.ID, "bob": f.billQ.ID} {
		qs, err := (&operator.Client{Endpoint: f.srv.URL, Token: f.creds[who]}).Pending(ctx)
		if err != nil || len(qs) != 1 || qs[0].ID != want {
			t.Errorf("%s's pending: %v, %v; want only %s", who, qs, err, want)
		}
	}
	if qs, err := (&operator.Client{Endpoint: f.srv.URL, Token: testToken}).Pending(ctx); err != nil || len(qs) != 2 {
		t.Errorf("the token's holder's pending: %v, %v; want both questions", qs, err)
	}
	f.doc.RemoveOperator("alice")
	f.ep.SetOperators(identity.NewDirectory(f.doc))
	_, err := (&operator.Client{Endpoint: f.srv.URL, Token: f.creds["alice"]}).Pending(ctx)
	if err == nil || !strings.Contains(err.Error(), "does not know this operator credential") || strings.Contains(err.Error(), f.creds["alice"]) {
		t.Errorf("a revoked credential: %v; want a refusal that does not quote it", err)
	}
}

// TestHelloSaysWhoTheConnectionIs: the endpoint's hello tells each
// connection the principal it authenticated, for the inbox to show.
func TestHelloSaysWhoTheConnectionIs(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	for cred, want := range map[string]string{
		testToken:        `{"answer":true,"name":"token holder","servers":["*"]}`,
		f.creds["alice"]: `{"answer":true,"name":"alice","servers":["deploy-*"]}`,
		f.creds["bob"]:   `{"answer":false,"name":"bob","servers":["billing"]}`,
	} {
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/socket", bearerHeader(cred))
		if err != nil {
			t.Fatal(err)
		}
		w := &wsClient{t, c}
		w.send(`{"type":"hello","versions":["0.1"],"role":"consumer"}`)
		h := w.read()
		c.Close()
		got := mustJSON(h["capabilities"].(map[string]any)["experimental"].(map[string]any)[PrincipalCapability])
		if string(got) != want {
			t.Errorf("hello says %s; want %s", got, want)
		}
	}
}

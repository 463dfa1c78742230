package endpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// remoteEvent is an event of a remote emitter: its source names the
// emitter, its session may collide with anyone's.
func remoteEvent(source, session, id, typ, subject string, seq int) string {
	subj := ""
	if subject != "" {
		subj = fmt.Sprintf(`"subject":%q,`, subject)
	}
	return fmt.Sprintf(`{"aep":"0.1","id":%q,"type":%q,%s"time":"2026-01-01T00:00:00Z","source":%q,"agent":"e","session":%q,"seq":%d,"severity":"notice","data":%s}`,
		id, typ, subj, source, session, seq, payloads[typ])
}

// payloads are valid data of each type the tests send (AEP-0002 §5).
var payloads = map[string]string{
	"attention.requested": `{"kind":"input","prompt":"p"}`,
	"attention.answered":  `{"answer":{"option":"yes"}}`,
	"attention.resolved":  `{"resolution":"answered"}`,
	"attention.timeout":   `{"after_ms":1}`,
	"session.started":     `{}`,
	"progress.status":     `{}`,
}

// emitterConn dials and says hello as an emitter with the given instance.
func emitterConn(t *testing.T, srv *httptest.Server, instance string) *wsClient {
	t.Helper()
	c, _ := emitterResuming(t, srv, instance, "")
	return c
}

// emitterHello is an emitter's hello as agent "agent", presenting the
// resume secret secret unless it is "".
func emitterHello(agent, instance, secret string) string {
	experimental := ""
	if secret != "" {
		experimental = `,"experimental":{"` + resumeCapability + `":"` + secret + `"}`
	}
	return `{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"` + agent + `","instance":"` + instance +
		`"},"capabilities":{"control":{"accepts":["control.attention.respond"]}` + experimental + `}}`
}

// resumeSecretOf returns the resume secret the endpoint's hello hands out.
func resumeSecretOf(t *testing.T, hello map[string]any) string {
	t.Helper()
	caps, _ := hello["capabilities"].(map[string]any)
	exp, _ := caps["experimental"].(map[string]any)
	secret, _ := exp[resumeCapability].(string)
	if secret == "" {
		t.Fatalf("hello %v; want a resume secret", hello)
	}
	return secret
}

// emitterResuming dials /socket and says hello as an emitter with the
// given instance, presenting secret unless it is ""; it returns the
// connection and the resume secret the endpoint gave it.
func emitterResuming(t *testing.T, srv *httptest.Server, instance, secret string) (*wsClient, string) {
	t.Helper()
	c := dial(t, srv)
	c.send(emitterHello("e", instance, secret))
	f := c.read()
	if f["type"] != "hello" {
		t.Fatalf("hello reply: %v", f)
	}
	return c, resumeSecretOf(t, f)
}

// sendEvent sends an event and reads the refusal it draws, if any, by
// pinging after it: frames are answered in order.
func (w *wsClient) sendEvent(ev string) map[string]any {
	w.t.Helper()
	w.send(ev)
	w.send(`{"type":"ping","t":"after"}`)
	for {
		f := w.read()
		switch {
		case f["type"] == "pong" && f["t"] == "after":
			return nil
		case f["type"] == "error":
			w.read() // the pong
			return f
		}
	}
}

func post(t *testing.T, base, ct, body string) (int, httpError) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/events", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("AEP-Version", "0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e httpError
	json.Unmarshal(b, &e)
	return resp.StatusCode, e
}

// TestLocalSessionsAreWrittenOnlyByTheirBridge replays the observed
// attack, and its variants on both bindings: with the token, nobody writes
// into a session of this process, under any source.
func TestLocalSessionsAreWrittenOnlyByTheirBridge(t *testing.T) {
	srv, hub, em, _ := newTestEndpoint(t)
	q := emit(t, em, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: "deploy?"})
	tests := []struct {
		name, event, detail string
	}{
		{"the bridge's own source, session and a made-up seq", remoteEvent(em.Source(), "s1", "F1", "attention.resolved", q.ID, 99), "belongs to a bridge in this process"},
		{"another source in the bridge's session", remoteEvent("aep://evil/agent/e", "s1", "F2", "attention.answered", q.ID, 0), "belongs to a bridge in this process"},
		{"the bridge's source in another session", remoteEvent(em.Source(), "elsewhere", "F3", "attention.timeout", q.ID, 0), "is a session of this process"},
		{"a plain event in the bridge's session", remoteEvent("aep://evil/agent/e", "s1", "F4", "progress.status", "", 0), "belongs to a bridge in this process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, srv.URL, "application/json", tt.event)
			if code != http.StatusForbidden || body.Error != "unauthorized" || !strings.Contains(body.Detail, tt.detail) {
				t.Fatalf("POST: %d %+v; want 403 unauthorized saying %q", code, body, tt.detail)
			}
			c := emitterConn(t, srv, "i")
			f := c.sendEvent(tt.event)
			if f == nil || f["code"] != "unauthorized" || f["cause"] == nil || !strings.Contains(f["detail"].(string), tt.detail) {
				t.Fatalf("WS: %v; want an unauthorized error frame naming the event", f)
			}
		})
	}
	if st := hub.Stats(); st.Open != 1 {
		t.Fatalf("%d open questions; want the bridge's question still open", st.Open)
	}
	c := dial(t, srv)
	c.hello()
	c.send(`{"type":"roster","id":"r"}`)
	if f := c.read(); len(f["entries"].([]any)) != 1 {
		t.Fatalf("roster %v; want only the bridge's claim", f)
	}
	// So operators' answers still reach the bridge, never "ambiguous".
	if f := c.sendEvent(`{"aep":"0.1","id":"C1","type":"control.attention.respond","subject":"` + q.ID + `","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":"s1","data":{"answer":{"option":"decline"}}}`); f != nil {
		t.Fatalf("an operator's answer: %v; want it routed to the bridge", f)
	}
	for _, line := range sseData(sse(t, srv.URL, "live=0&from=all")) {
		if strings.Contains(line, `"F`) {
			t.Fatalf("a refused event reached subscribers: %s", line)
		}
	}
}

// TestAConsumerSendsCommandsNeverEvents: hello as a consumer (or with no
// role) makes a connection a commander, never an emitter.
func TestAConsumerSendsCommandsNeverEvents(t *testing.T) {
	onEveryPlane(t, testAConsumerSendsCommandsNeverEvents)
}

func testAConsumerSendsCommandsNeverEvents(t *testing.T, tp testPlane) {
	fx := newTestEndpointOn(t, tp)
	srv, tg := fx.srv, fx.tg
	for _, hello := range []string{
		`{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"op"}}`,
		`{"type":"hello","versions":["0.1"],"identity":{"agent":"op"}}`,
	} {
		c := dial(t, srv)
		c.send(hello)
		c.read()
		f := c.sendEvent(remoteEvent("aep://op/agent/op", "mine", "E1", "session.started", "", 0))
		if f == nil || f["code"] != "unauthorized" || f["cause"] != "E1" || !strings.Contains(f["detail"].(string), "consumer") {
			t.Fatalf("event from %s: %v; want unauthorized", hello, f)
		}
		// Its commands are routed; frames are handled in order, so the
		// command has reached the session when the pong after it arrives.
		if f := c.sendEvent(fx.cmdTo("C1")); f != nil {
			t.Fatalf("command from %s: %v", hello, f)
		}
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if len(tg.cmds) != 2 {
		t.Fatalf("%d commands reached the session; want both", len(tg.cmds))
	}
}

// TestASourceHasOneWriter: a source a live connection writes is refused to
// every other connection and to POST; when that connection leaves with a
// question open, only a connection presenting the resume secret the
// endpoint gave the writer may take the source back and settle it, not
// one that merely says the same agent and instance.
func TestASourceHasOneWriter(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	srv, hub := f.srv, f.hub
	const src = "aep://b/agent/e/session/r"
	a, secret := emitterResuming(t, srv, "host-b/1", "")
	if f := a.sendEvent(remoteEvent(src, "r", "Q", "attention.requested", "srv", 0)); f != nil {
		t.Fatalf("the emitter's own question: %v", f)
	}
	impostor := emitterConn(t, srv, "host-b/1")
	if f := impostor.sendEvent(remoteEvent(src, "r", "X1", "attention.resolved", "Q", 1)); f == nil || f["code"] != "unauthorized" || !strings.Contains(f["detail"].(string), "another live connection") {
		t.Fatalf("second connection: %v; want unauthorized", f)
	}
	if code, body := post(t, srv.URL, "application/json", remoteEvent(src, "r", "X2", "attention.resolved", "Q", 1)); code != 403 {
		t.Fatalf("POST as the source: %d %+v; want 403", code, body)
	}
	a.c.Close()
	<-f.released
	if code, body := post(t, srv.URL, "application/json", remoteEvent(src, "r", "X3", "attention.resolved", "Q", 1)); code != 403 || !strings.Contains(body.Detail, "left questions open") {
		t.Fatalf("POST while the emitter is away: %d %+v; want 403", code, body)
	}
	other := emitterConn(t, srv, "host-z/9")
	if f := other.sendEvent(remoteEvent(src, "r", "X4", "attention.resolved", "Q", 1)); f == nil || f["code"] != "unauthorized" {
		t.Fatalf("another emitter while the owner is away: %v; want unauthorized", f)
	}
	// Agent and instance are public (roster): saying them proves nothing.
	lookalike, _ := emitterResuming(t, srv, "host-b/1", "")
	if f := lookalike.sendEvent(remoteEvent(src, "r", "X5", "attention.resolved", "Q", 1)); f == nil || f["code"] != "unauthorized" || !strings.Contains(f["detail"].(string), "resume secret") {
		t.Fatalf("the owner's agent and instance without its secret: %v; want unauthorized", f)
	}
	guess, _ := emitterResuming(t, srv, "host-b/1", strings.Repeat("A", 43))
	if f := guess.sendEvent(remoteEvent(src, "r", "X6", "attention.resolved", "Q", 1)); f == nil || f["code"] != "unauthorized" {
		t.Fatalf("the owner's agent and instance with a wrong secret: %v; want unauthorized", f)
	}
	back, kept := emitterResuming(t, srv, "host-b/1", secret)
	if kept != secret {
		t.Fatalf("the endpoint gave the returning emitter secret %q; want the one it presented kept", kept)
	}
	if f := back.sendEvent(remoteEvent(src, "r", "R", "attention.resolved", "Q", 1)); f != nil {
		t.Fatalf("the owner back: %v; want its resolution accepted", f)
	}
	if n := hub.Stats().Open; n != 0 {
		t.Fatalf("%d open; want the owner's resolution to settle the question", n)
	}
}

// TestLifecycleComesOnlyFromTheQuestionsOwner: another emitter, even one
// legitimately sharing the session name, cannot answer, resolve or time
// out someone else's question.
func TestLifecycleComesOnlyFromTheQuestionsOwner(t *testing.T) {
	onEveryPlane(t, testLifecycleComesOnlyFromTheQuestionsOwner)
}

func testLifecycleComesOnlyFromTheQuestionsOwner(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv, hub := f.srv, f.hub
	owner := emitterConn(t, srv, "a")
	owner.sendEvent(remoteEvent("aep://a/agent/e", "shared", "Q", "attention.requested", "srv", 0))
	other := emitterConn(t, srv, "b")
	for i, typ := range []string{"attention.answered", "attention.resolved", "attention.timeout"} {
		ev := remoteEvent("aep://b/agent/e", "shared", fmt.Sprintf("L%d", i), typ, "Q", i)
		if f := other.sendEvent(ev); f == nil || f["code"] != "unauthorized" || !strings.Contains(f["detail"].(string), "only the emitter that asked it") {
			t.Fatalf("%s by another emitter over WS: %v; want unauthorized", typ, f)
		}
		if code, _ := post(t, srv.URL, "application/json", strings.Replace(ev, `"L`, `"P`, 1)); code != 403 {
			t.Fatalf("%s by another emitter over POST: %d; want 403", typ, code)
		}
	}
	if f := other.sendEvent(remoteEvent("aep://b/agent/e", "shared", "Q", "attention.requested", "srv", 9)); f == nil || f["code"] != "unauthorized" {
		t.Fatalf("a question reusing an open question's id: %v; want unauthorized", f)
	}
	if n := hub.Stats().Open; n != 1 {
		t.Fatalf("%d open; want the owner's question untouched", n)
	}
}

// TestCollidingEmittersStayVisibleAsAmbiguous: two emitters with different
// sources on one session name are both legitimate (AEP-0001 §5.2); both
// are served, and a command to the session is refused ambiguous (AEP-0004
// §4.5) until one leaves.
func TestCollidingEmittersStayVisibleAsAmbiguous(t *testing.T) {
	srv, _, _, _ := newTestEndpoint(t)
	a := emitterConn(t, srv, "a")
	b := emitterConn(t, srv, "b")
	for i, c := range []*wsClient{a, b} {
		if f := c.sendEvent(remoteEvent(fmt.Sprintf("aep://%d/agent/e", i), "shared", fmt.Sprintf("S%d", i), "session.started", "", 0)); f != nil {
			t.Fatalf("emitter %d: %v", i, f)
		}
	}
	op := dial(t, srv)
	op.hello()
	op.send(`{"type":"roster","id":"r"}`)
	if f := op.read(); len(f["entries"].([]any)) != 3 {
		t.Fatalf("roster %v; want the bridge's claim and both emitters'", f)
	}
	op.send(`{"aep":"0.1","id":"C","type":"control.attention.respond","subject":"Q","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":"shared","data":{"answer":{"option":"decline"}}}`)
	if f := op.read(); f["code"] != "ambiguous" || f["cause"] != "C" {
		t.Fatalf("command: %v; want ambiguous", f)
	}
	got := sseData(sse(t, srv.URL, "live=0&from=all&filter="+`%7B%22session%22%3A%22shared%22%7D`))
	if len(got) != 2 {
		t.Fatalf("history of the shared session: %q; want both emitters' events", got)
	}
}

// TestAConnectionWritesABoundedNumberOfSources: the endpoint's record of
// who writes what cannot be grown without bound by one connection.
func TestAConnectionWritesABoundedNumberOfSources(t *testing.T) {
	srv, _, _, _ := newTestEndpoint(t)
	c := emitterConn(t, srv, "many")
	for i := range maxSourcesPerConn + 1 {
		c.send(remoteEvent(fmt.Sprintf("aep://many/agent/e/session/m%d", i), fmt.Sprintf("m%d", i), fmt.Sprintf("E%d", i), "session.started", "", 0))
	}
	c.send(`{"type":"ping","t":"end"}`)
	var refused []string
	for f := c.read(); f["type"] != "pong"; f = c.read() {
		if f["type"] == "error" {
			refused = append(refused, fmt.Sprint(f["cause"], " ", f["code"], " ", f["detail"]))
		}
	}
	want := fmt.Sprintf("E%d unauthorized this connection already writes %d sources", maxSourcesPerConn, maxSourcesPerConn)
	if len(refused) != 1 || !strings.HasPrefix(refused[0], want) {
		t.Fatalf("refused %q; want only the last event, saying %q", refused, want)
	}
}

// TestJoinedSessionsAreWrittenOnlyByTheirBridge: a session that a bridge
// joined to this hub (it proved the token at /join) is its bridge's, like
// a session of this process: no /socket emitter and no POST may write into
// it, under any source, even while the bridge is away with a question
// open; nor may another joined bridge under another source.
func TestJoinedSessionsAreWrittenOnlyByTheirBridge(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	srv, hub := f.srv, f.hub
	const src = "aep://j/agent/b/session/J"
	bridge, secret := joinResuming(t, srv, "host-j/1", "")
	for i, typ := range []string{"session.started", "attention.requested"} {
		if fr := bridge.sendEvent(remoteEvent(src, "J", fmt.Sprintf("B%d", i), typ, "srv", i)); fr != nil {
			t.Fatalf("the joined bridge's %s: %v", typ, fr)
		}
	}
	impostor := emitterConn(t, srv, "evil")
	refused := func(when string) {
		t.Helper()
		for i, typ := range []string{"progress.status", "attention.requested", "session.started"} {
			ev := remoteEvent("aep://evil/agent/e", "J", fmt.Sprintf("X%d", i), typ, "srv", i)
			if fr := impostor.sendEvent(ev); fr == nil || fr["code"] != "unauthorized" || fr["cause"] == nil || !strings.Contains(fr["detail"].(string), "joined to this hub") {
				t.Fatalf("%s, a /socket emitter's %s in the joined session: %v; want unauthorized", when, typ, fr)
			}
			code, body := post(t, srv.URL, "application/json", ev)
			if code != http.StatusForbidden || body.Error != "unauthorized" || !strings.Contains(body.Detail, "joined to this hub") {
				t.Fatalf("%s, POST of %s into the joined session: %d %+v; want 403 unauthorized", when, typ, code, body)
			}
		}
	}
	refused("while the bridge is linked")
	op := dial(t, srv)
	op.hello()
	op.send(`{"type":"roster","id":"r"}`)
	if fr := op.read(); len(fr["entries"].([]any)) != 2 {
		t.Fatalf("roster %v; want the local claim and the joined bridge's only", fr)
	}
	respond := `{"aep":"0.1","id":"%s","type":"control.attention.respond","subject":"B1","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":"J","data":{"answer":{"option":"decline"}}}`
	if fr := op.sendEvent(fmt.Sprintf(respond, "C1")); fr != nil {
		t.Fatalf("an operator's answer: %v; want it routed to the joined bridge", fr)
	}
	if cmd := bridge.read(); cmd["id"] != "C1" {
		t.Fatalf("the joined bridge got %v; want the command C1", cmd)
	}

	bridge.c.Close()
	<-f.released
	refused("while the bridge is away with its question open")

	// Another joined bridge, under its own source, may not write the
	// session either, while its bridge is away or back: a joined session
	// is bound to the source that first wrote it.
	second := joinConn(t, srv, "host-k/1")
	ev := remoteEvent("aep://k/agent/b/session/J", "J", "X8", "session.started", "", 0)
	if fr := second.sendEvent(ev); fr == nil || fr["code"] != "unauthorized" || !strings.Contains(fr["detail"].(string), "under source") {
		t.Fatalf("another joined bridge in the session while its bridge is away: %v; want unauthorized", fr)
	}
	first, _ := joinResuming(t, srv, "host-j/1", secret)
	if fr := first.sendEvent(remoteEvent(src, "J", "B2", "progress.status", "", 2)); fr != nil {
		t.Fatalf("the bridge back: %v", fr)
	}
	if fr := second.sendEvent(strings.Replace(ev, `"X8"`, `"X9"`, 1)); fr == nil || fr["code"] != "unauthorized" {
		t.Fatalf("another joined bridge in the session while its bridge is linked: %v; want unauthorized", fr)
	}
	if fr := op.sendEvent(fmt.Sprintf(respond, "C2")); fr != nil {
		t.Fatalf("an operator's answer after the bridge came back: %v; want it routed to it", fr)
	}
	if cmd := first.read(); cmd["id"] != "C2" {
		t.Fatalf("the joined bridge got %v; want the command C2", cmd)
	}
	if n := hub.Stats().Open; n != 1 {
		t.Fatalf("%d open; want only the joined bridge's question", n)
	}
	for _, line := range sseData(sse(t, srv.URL, "live=0&from=all")) {
		if strings.Contains(line, `"X`) {
			t.Fatalf("a refused event reached subscribers: %s", line)
		}
	}
}

// TestSettledQuestionsStayTheirOwners: after the bridge settled its
// question, an answer to it from anyone else (over POST or WebSocket, in
// another session) is refused, so no forged "answered by" reaches the
// question's history.
func TestSettledQuestionsStayTheirOwners(t *testing.T) {
	onEveryPlane(t, testSettledQuestionsStayTheirOwners)
}

func testSettledQuestionsStayTheirOwners(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	q := f.emit(t, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: "deploy?"})
	f.emit(t, "attention.resolved", aep.AttentionResolved{Resolution: aep.ResolutionAnswered}, q.ID)
	forged := remoteEvent("aep://evil/agent/e", "evil", "F1", "attention.answered", q.ID, 0)
	if code, body := post(t, srv.URL, "application/json", forged); code != http.StatusForbidden || body.Error != "unauthorized" {
		t.Fatalf("POST of an answer to a settled question of the bridge: %d %+v; want 403 unauthorized", code, body)
	}
	c := emitterConn(t, srv, "evil")
	if f := c.sendEvent(strings.Replace(forged, `"F1"`, `"F2"`, 1)); f == nil || f["code"] != "unauthorized" {
		t.Fatalf("WS answer to a settled question of the bridge: %v; want unauthorized", f)
	}
	for _, line := range sseData(sse(t, srv.URL, "live=0&from=all")) {
		if strings.Contains(line, `"F`) {
			t.Fatalf("a forged answer reached the history: %s", line)
		}
	}
}

// TestAJoinedTokenHolderCannotWriteAnotherBridgesSession replays the
// observed attack: a token holder that joins through /join and writes
// session.started into another joined bridge's session under its own
// source is refused, nothing reaches the session's history, and operators'
// answers still reach the bridge instead of being refused ambiguous.
func TestAJoinedTokenHolderCannotWriteAnotherBridgesSession(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	srv := f.srv
	bridge := joinConn(t, srv, "host-b/1")
	for i, typ := range []string{"session.started", "attention.requested"} {
		if fr := bridge.sendEvent(remoteEvent("aep://vm/agent/b/session/SB", "SB", fmt.Sprintf("B%d", i), typ, "srv", i)); fr != nil {
			t.Fatalf("bridge B's %s: %v", typ, fr)
		}
	}
	evil := joinConn(t, srv, "evil")
	for i, typ := range []string{"session.started", "attention.resolved", "progress.status"} {
		ev := remoteEvent("aep://vm/agent/evil/session/SB", "SB", fmt.Sprintf("X%d", i), typ, "B1", i)
		if fr := evil.sendEvent(ev); fr == nil || fr["code"] != "unauthorized" || fr["cause"] != fmt.Sprintf("X%d", i) {
			t.Fatalf("a joined token holder's %s in B's session under its own source: %v; want unauthorized", typ, fr)
		}
		if code, body := post(t, srv.URL, "application/json", strings.Replace(ev, `"X`, `"P`, 1)); code != http.StatusForbidden || body.Error != "unauthorized" || body.Detail == "" {
			t.Fatalf("POST of %s into B's session under another source: %d %+v; want 403 with a detail", typ, code, body)
		}
	}
	op := dial(t, srv)
	op.hello()
	if fr := op.sendEvent(`{"aep":"0.1","id":"C1","type":"control.attention.respond","subject":"B1","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":"SB","data":{"answer":{"option":"decline"}}}`); fr != nil {
		t.Fatalf("an operator's answer to B's question: %v; want it routed to B", fr)
	}
	if cmd := bridge.read(); cmd["id"] != "C1" {
		t.Fatalf("bridge B got %v; want the command C1", cmd)
	}
	for _, line := range sseData(sse(t, srv.URL, "live=0&from=all")) {
		if strings.Contains(line, `"X`) || strings.Contains(line, `"P`) {
			t.Fatalf("a refused event reached B's history: %s", line)
		}
	}
}

// TestAJoinedBridgesHeldSourceGoesBackOnlyToIt: while a joined bridge's
// link is down with a question open, a token holder that says hello with
// the bridge's (public) agent and instance, through /join or /socket,
// cannot take its source; the bridge, presenting the resume secret the
// endpoint gave it, can, and settles its question.
func TestAJoinedBridgesHeldSourceGoesBackOnlyToIt(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	srv, hub := f.srv, f.hub
	const src = "aep://vm/agent/b/session/SB"
	bridge, secret := joinResuming(t, srv, "host-b/1", "")
	if fr := bridge.sendEvent(remoteEvent(src, "SB", "Q", "attention.requested", "srv", 0)); fr != nil {
		t.Fatalf("bridge B's question: %v", fr)
	}
	bridge.c.Close()
	<-f.released
	joined, _ := joinResuming(t, srv, "host-b/1", "")
	if fr := joined.sendEvent(remoteEvent(src, "SB", "X1", "attention.resolved", "Q", 1)); fr == nil || fr["code"] != "unauthorized" {
		t.Fatalf("an impostor joined as B's agent and instance: %v; want unauthorized", fr)
	}
	socket, _ := emitterResuming(t, srv, "host-b/1", secret)
	if fr := socket.sendEvent(remoteEvent(src, "SB", "X2", "attention.resolved", "Q", 1)); fr == nil || fr["code"] != "unauthorized" {
		t.Fatalf("B's secret over /socket, not /join: %v; want unauthorized", fr)
	}
	if n := hub.Stats().Open; n != 1 {
		t.Fatalf("%d open; want B's question still open", n)
	}
	back, _ := joinResuming(t, srv, "host-b/1", secret)
	if fr := back.sendEvent(remoteEvent(src, "SB", "R", "attention.resolved", "Q", 1)); fr != nil {
		t.Fatalf("B back with its secret: %v; want its resolution accepted", fr)
	}
	if n := hub.Stats().Open; n != 0 {
		t.Fatalf("%d open; want B's resolution to settle its question", n)
	}
}

// TestAJoinedBridgeTakesItsSessionFromASquatter: a /socket emitter that
// writes a bridge's session name before the bridge joins (after the hub
// changed hands, say) loses its claim when the bridge writes it, so
// operators' commands reach the bridge instead of being refused as
// ambiguous, and it may not write the session again.
func TestAJoinedBridgeTakesItsSessionFromASquatter(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	srv := f.srv
	squatter := emitterConn(t, srv, "evil")
	if fr := squatter.sendEvent(remoteEvent("aep://evil/agent/e", "SB", "X0", "session.started", "", 0)); fr != nil {
		t.Fatalf("the squatter's first event: %v", fr)
	}
	bridge := joinConn(t, srv, "host-b/1")
	for i, typ := range []string{"session.started", "attention.requested"} {
		if fr := bridge.sendEvent(remoteEvent("aep://vm/agent/b/session/SB", "SB", fmt.Sprintf("B%d", i), typ, "srv", i)); fr != nil {
			t.Fatalf("the bridge's %s in its own session: %v; want it accepted", typ, fr)
		}
	}
	if fr := squatter.sendEvent(remoteEvent("aep://evil/agent/e", "SB", "X1", "progress.status", "", 1)); fr == nil || fr["code"] != "unauthorized" {
		t.Fatalf("the squatter after the bridge joined: %v; want unauthorized", fr)
	}
	op := dial(t, srv)
	op.hello()
	if fr := op.sendEvent(`{"aep":"0.1","id":"C1","type":"control.attention.respond","subject":"B1","time":"2026-01-01T00:00:00Z","source":"aep://op/agent/op","agent":"op","session":"SB","data":{"answer":{"option":"decline"}}}`); fr != nil {
		t.Fatalf("an operator's answer to the bridge's question: %v; want it routed to the bridge", fr)
	}
	if cmd := bridge.read(); cmd["id"] != "C1" {
		t.Fatalf("the bridge got %v; want the command C1", cmd)
	}
}

// TestAQuestionIsRoutableTheMomentItIsPublished: an emitter's claim on
// the session it sequences exists before any consumer sees its question,
// so an operator who answers at once is routed to the emitter, not told
// that nobody owns the session. The hub's filter runs while the event is
// fanned out, so it observes the route at the moment of publication; a
// refused event leaves no claim behind.
func TestAQuestionIsRoutableTheMomentItIsPublished(t *testing.T) {
	f := newFixture(t, bus.HubOptions{ReplayPerSession: 4, ReplaySessions: 8}, Options{MaxBody: 64 << 10})
	seen := make(chan string, 4)
	sub := f.hub.Subscribe(func(ev *aep.Event) bool {
		if ev.Session == "remote-s" && ev.Type == "attention.requested" {
			if _, why := f.ep.route(ev.Session); why != nil {
				seen <- why.Detail
			} else {
				seen <- ""
			}
		}
		return false
	}, 4)
	defer sub.Close()
	c := emitterConn(t, f.srv, "i")
	if e := c.sendEvent(remoteEvent("aep://vm/agent/e", "remote-s", "Q1", "attention.requested", "", 1)); e != nil {
		t.Fatalf("question refused: %v", e)
	}
	if why := <-seen; why != "" {
		t.Fatalf("route when the question was published: %s", why)
	}

	// A question whose id another emitter's open question holds is
	// refused, and the session it named is not claimed.
	other := emitterConn(t, f.srv, "j")
	if e := other.sendEvent(remoteEvent("aep://vm/agent/other", "other-s", "Q1", "attention.requested", "", 1)); e == nil || e["code"] != "unauthorized" {
		t.Fatalf("reused question id: %v; want unauthorized", e)
	}
	if _, why := f.ep.route("other-s"); why == nil || why.Reason != authority.ReasonNoRoute {
		t.Fatalf("route of a refused event's session: %v; want no-route", why)
	}
}

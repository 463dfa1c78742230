package endpoint

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
)

const testToken = "t0k3n-for-tests"

type recordingTarget struct {
	mu    sync.Mutex
	cmds  []aep.Event
	froms []control.Sender
}

func (r *recordingTarget) Submit(cmd aep.Event, from control.Sender) (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmds = append(r.cmds, cmd)
	r.froms = append(r.froms, from)
	return "", ""
}

// fixture is an endpoint serving one local session, s1, over loopback.
type fixture struct {
	srv *httptest.Server
	ep  *Endpoint
	hub *bus.Hub
	em  *bus.Emitter
	tg  *recordingTarget
	// session is the id of the session em writes.
	session string
	// arrived, on a fixture whose session asks on another member of its
	// plane (newPlaneFixture), records what reached the endpoint's hub.
	arrived *arrivals
	// target takes the session's commands that the plane routes to the
	// member that asks (newPlaneFixture); tg unless a test sets another.
	target atomic.Pointer[targetOf]
	// released receives once each time a connection's sources are
	// released (the endpoint noticed it left).
	released chan struct{}
}

// newFixture starts an endpoint with a hub of hubOpts and the options o
// (Token and Hub are filled in).
func newFixture(t *testing.T, hubOpts bus.HubOptions, o Options) *fixture {
	t.Helper()
	f := &fixture{hub: bus.NewHubWith(hubOpts), session: "s1", tg: &recordingTarget{}, released: make(chan struct{}, 256)}
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "bridge", Session: "s1", Host: "h", Sinks: []bus.Sink{f.hub}, AttentionCapture: aep.CaptureRedacted})
	if err != nil {
		t.Fatal(err)
	}
	f.em = em
	o.Token, o.Hub = testToken, f.hub
	o.afterRelease = func() { f.released <- struct{}{} }
	if f.ep, err = New(o); err != nil {
		t.Fatal(err)
	}
	f.ep.AddClaim(Claim{Session: "s1", Source: em.Source(), Agent: "bridge", Accepts: []string{"control.attention.respond"}, Target: f.tg})
	f.srv = httptest.NewServer(f.ep.Handler())
	t.Cleanup(func() { f.ep.Close(); f.srv.Close() })
	return f
}

func newTestEndpoint(t *testing.T) (*httptest.Server, *bus.Hub, *bus.Emitter, *recordingTarget) {
	t.Helper()
	f := newFixture(t, bus.HubOptions{ReplayPerSession: 4, ReplaySessions: 8}, Options{MaxBody: 64 << 10})
	return f.srv, f.hub, f.em, f.tg
}

// emit emits an event of the local session; a lifecycle event names its
// question as subject.
func emit(t *testing.T, em *bus.Emitter, typ string, data any, subject ...string) aep.Event {
	t.Helper()
	capture := aep.CaptureMetadata
	if strings.HasPrefix(typ, "attention.") {
		capture = aep.CaptureRedacted
	}
	d := aep.Draft{Type: typ, Capture: capture, Severity: aep.SeverityNotice, Data: data}
	if len(subject) > 0 {
		d.Subject = subject[0]
	}
	ev, _, err := em.Emit(d)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestAuthIsRequiredEverywhereButHealthz checks every data surface; discovery
// without credentials is only its public part (see TestDiscoveryWithoutToken).
func TestAuthIsRequiredEverywhereButHealthz(t *testing.T) {
	srv, _, _, _ := newTestEndpoint(t)
	for _, path := range []string{"/stream", "/socket"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d; want 401", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/events", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 401 {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	}
	resp, _ = http.Get(srv.URL + "/.well-known/aep?access_token=" + testToken)
	var disc map[string]any
	json.NewDecoder(resp.Body).Decode(&disc)
	caps := disc["capabilities"].(map[string]any)
	if caps["replay"].(map[string]any)["buffer"] != float64(4) || disc["endpoints"] == nil {
		t.Errorf("discovery: %v", disc)
	}
	if a := caps["control"].(map[string]any)["accepts"].([]any); len(a) != 1 || a[0] != "control.attention.respond" {
		t.Errorf("accepts: %v", a)
	}
}

type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func dial(t *testing.T, srv *httptest.Server) *wsClient {
	t.Helper()
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/socket"
	h := http.Header{"Authorization": {"Bearer " + testToken}}
	c, _, err := websocket.DefaultDialer.Dial(u, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &wsClient{t, c}
}

func (w *wsClient) send(v string) {
	w.t.Helper()
	if err := w.c.WriteMessage(websocket.TextMessage, []byte(v)); err != nil {
		w.t.Fatal(err)
	}
}

// readGuard bounds every read of a test's connection. It is a failure
// guard, never a synchronisation: a test that writes thousands of events
// under -race on a loaded machine takes well over ten seconds to be
// answered, and still passes.
const readGuard = 60 * time.Second

func (w *wsClient) read() map[string]any {
	w.t.Helper()
	w.c.SetReadDeadline(time.Now().Add(readGuard))
	_, b, err := w.c.ReadMessage()
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func (w *wsClient) hello() {
	w.send(`{"type":"hello","versions":["0.2","0.1"],"role":"consumer","identity":{"agent":"op"}}`)
	if h := w.read(); h["type"] != "hello" || len(h["versions"].([]any)) != 1 {
		w.t.Fatalf("hello reply: %v", h)
	}
}

func TestSocketHelloRules(t *testing.T) {
	srv, _, _, _ := newTestEndpoint(t)
	c := dial(t, srv)
	c.send(`{"type":"subscribe","id":"s"}`)
	if f := c.read(); f["code"] != "hello-required" {
		t.Fatalf("got %v; want hello-required", f)
	}
	c = dial(t, srv)
	c.send(`{"type":"hello","versions":["9.9"]}`)
	if f := c.read(); f["code"] != "version-unsupported" || f["versions"] == nil {
		t.Fatalf("got %v; want version-unsupported listing versions", f)
	}
}

// newTestEndpointOn is newTestEndpoint on the operator plane tp, its
// session asking on another member than the endpoint's (newPlaneFixture).
func newTestEndpointOn(t *testing.T, tp testPlane) *fixture {
	t.Helper()
	return newPlaneFixture(t, tp, bus.HubOptions{ReplayPerSession: 4, ReplaySessions: 8}, Options{MaxBody: 64 << 10})
}

// TestSocketSubscribeReplayLiveAndErrors: an operator's subscription
// starts with the open questions, then the replay, then live events; a
// command reaches the session that asked, or is refused in-band.
func TestSocketSubscribeReplayLiveAndErrors(t *testing.T) {
	onEveryPlane(t, testSocketSubscribeReplayLiveAndErrors)
}

func testSocketSubscribeReplayLiveAndErrors(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv, tg := f.srv, f.tg
	first := f.emit(t, "session.started", nil)
	asked := f.emit(t, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: "mail ops@example.com?"})
	c := dial(t, srv)
	c.hello()
	// An invalid filter is refused in-band; the connection survives.
	c.send(`{"type":"subscribe","id":"bad","filter":{"seq":1}}`)
	if f := c.read(); f["type"] != "error" || f["code"] != "invalid-filter" || f["id"] != "bad" {
		t.Fatalf("got %v", f)
	}
	c.c.WriteMessage(websocket.BinaryMessage, []byte{1, 2})
	if f := c.read(); f["type"] != "error" {
		t.Fatalf("binary frame: %v", f)
	}
	c.send(`{"type":"no-such-frame"}`)
	c.send(`{"type":"ping","t":7}`)
	if f := c.read(); f["type"] != "pong" || f["t"] != float64(7) {
		t.Fatalf("ping: %v", f)
	}
	c.send(`{"type":"subscribe","id":"a","filter":{"type":["attention.*","session.*"]},"from":"all","capture":"metadata"}`)
	if f := c.read(); f["type"] != "subscribed" || f["open"] != float64(1) || f["replay"] != float64(1) {
		t.Fatalf("got %v; want subscribed with one open question and one replayed event", f)
	}
	// The open question comes first, down-leveled like any event; the
	// replay follows without it.
	req := c.read()
	if req["id"] != asked.ID || req["capture"] != "metadata" || strings.Contains(req["data"].(map[string]any)["prompt"].(string), "ops@") {
		t.Fatalf("got %v; want the open question first, at the metadata ceiling", req)
	}
	if ev := c.read(); ev["id"] != first.ID {
		t.Fatalf("replay did not follow with the first buffered event: %v", ev)
	}
	live := emit(t, f.em, "attention.timeout", aep.AttentionTimeout{AfterMS: 5}) // read as it arrives
	if ev := c.read(); ev["id"] != live.ID {
		t.Fatalf("live event: %v", ev)
	}
	// Commands: routed to the claiming session, or refused by frame.
	cmd := `{"aep":"0.1","id":"C1","type":"control.attention.respond","subject":"Q","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/op","agent":"op","session":"%s","data":{"answer":{"option":"decline"}}}`
	c.send(strings.Replace(cmd, "%s", "nowhere", 1))
	if f := c.read(); f["type"] != "error" || f["code"] != "no-route" || f["cause"] != "C1" {
		t.Fatalf("got %v; want a no-route frame caused by C1", f)
	}
	c.send(strings.Replace(cmd, "%s", f.session, 1))
	c.send(`{"type":"roster","id":"r1"}`)
	if f := c.read(); f["type"] != "roster" || len(f["entries"].([]any)) != 1 {
		t.Fatalf("roster: %v", f)
	}
	tg.mu.Lock()
	n := len(tg.cmds)
	tg.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d commands reached the session; want 1", n)
	}
	c.send(`{"type":"unsubscribe","id":"a"}`)
	if f := c.read(); f["type"] != "unsubscribed" {
		t.Fatalf("got %v", f)
	}
}

// TestSocketReplayExhausted: a subscription from a position the replay
// no longer holds is told so, with the earliest position held.
func TestSocketReplayExhausted(t *testing.T) { onEveryPlane(t, testSocketReplayExhausted) }

func testSocketReplayExhausted(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	for i := 0; i < 6; i++ { // the buffer holds 4
		f.emit(t, "session.started", nil)
	}
	c := dial(t, f.srv)
	c.hello()
	c.send(`{"type":"subscribe","id":"a","from":[{"session":"` + f.session + `","epoch":0,"seq":0}]}`)
	c.read() // subscribed
	fr := c.read()
	if fr["type"] != "replay-exhausted" || fr["earliest"].(map[string]any)["seq"] != float64(2) {
		t.Fatalf("got %v; want replay-exhausted with earliest seq 2", fr)
	}
}

// TestStreamReplayAndResume: SSE replays with positions as event ids,
// and resumes after Last-Event-ID.
func TestStreamReplayAndResume(t *testing.T) { onEveryPlane(t, testStreamReplayAndResume) }

func testStreamReplayAndResume(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv, s1 := f.srv, f.session
	a := f.emit(t, "session.started", nil)
	b := f.emit(t, "attention.timeout", aep.AttentionTimeout{AfterMS: 1})
	get := func(query string, hdr map[string]string) []string {
		req, _ := http.NewRequest("GET", srv.URL+"/stream?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var lines []string
		sc := bufio.NewScanner(strings.NewReader(string(body)))
		for sc.Scan() {
			if sc.Text() != "" {
				lines = append(lines, sc.Text())
			}
		}
		return lines
	}
	lines := get("live=0&from=all", nil)
	want := []string{": subscribed open=0 replay=2", "id: " + s1 + ":0:0", "event: session.started", "data: ", "id: " + s1 + ":0:1", "event: attention.timeout", "data: ", ": replay-complete"}
	if len(lines) != len(want) {
		t.Fatalf("got %q", lines)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q; want prefix %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[3], a.ID) || !strings.Contains(lines[6], b.ID) {
		t.Errorf("wrong events: %q", lines)
	}
	lines = get("live=0", map[string]string{"Last-Event-ID": s1 + ":0:0"})
	if len(lines) != 5 || lines[1] != "id: "+s1+":0:1" {
		t.Fatalf("resume after %s:0:0: %q", s1, lines)
	}
	if lines := get("filter="+url.QueryEscape(`{"time":"x"}`), nil); len(lines) == 0 || !strings.Contains(lines[0], "invalid-filter") {
		t.Fatalf("invalid filter: %q", lines)
	}
}

func TestIngest(t *testing.T) {
	srv, hub, _, _ := newTestEndpoint(t)
	sub := hub.Subscribe(nil, 8)
	post := func(ct, ver, body string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/events", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if ver != "" {
			req.Header.Set("AEP-Version", ver)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ev := `{"aep":"0.1","id":"E1","type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://o/agent/x/session/z","agent":"x","session":"z","seq":0}`
	tests := []struct {
		name, ct, ver, body string
		want                int
	}{
		{"no version", "application/json", "", ev, 426},
		{"wrong type", "text/plain", "0.1", ev, 415},
		{"invalid event", "application/x-ndjson", "0.1", ev + "\n{\"aep\":\"0.1\"}", 400},
		{"too large", "application/json", "0.1", strings.Repeat(" ", 2<<20), 413},
		{"accepted", "application/x-ndjson", "0.1", ev, 202},
	}
	for _, tt := range tests {
		if got := post(tt.ct, tt.ver, tt.body); got != tt.want {
			t.Errorf("%s: %d; want %d", tt.name, got, tt.want)
		}
	}
	select {
	case d := <-sub.C:
		if d.Event.ID != "E1" {
			t.Fatalf("got %s", d.Event.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ingested event did not reach subscribers")
	}
}

func deadline() time.Time { return time.Now().Add(10 * time.Second) }

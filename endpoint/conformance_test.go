package endpoint

// Tests named after the checks of AEP-0003 §10 and AEP-0004 §7 (and the
// live checker's classes in the conformance README), run against a real
// endpoint over loopback HTTP and WebSocket.

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

func postNDJSON(t *testing.T, base string, lines ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/events", strings.NewReader(strings.Join(lines, "\n")))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("AEP-Version", "0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func liveEvent(session string, seq int, typ string) string {
	return fmt.Sprintf(`{"aep":"0.1","id":"L%s-%d","type":"%s","time":"2026-01-01T00:00:00Z","source":"aep://checker/agent/aep-live-check/session/%s","agent":"aep-live-check","session":"%s","seq":%d,"capture":"redacted","data":{"message":"secret text %d"}}`,
		session, seq, typ, session, session, seq, seq)
}

func sse(t *testing.T, base, query string) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/stream?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func sseData(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "data: ") {
			out = append(out, strings.TrimPrefix(l, "data: "))
		}
	}
	return out
}

// AEP-0003 §3.2, §3.3: a batch POST reaches a filtered SSE consumer with
// its envelopes byte-identical and positions ascending.
func TestAEP0003_IngestFanout(t *testing.T) { onEveryPlane(t, testAEP0003_IngestFanout) }

func testAEP0003_IngestFanout(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	var lines []string
	for i := 0; i < 3; i++ {
		lines = append(lines, liveEvent("live-a", i, "progress.status"))
	}
	if resp := postNDJSON(t, srv.URL, lines...); resp.StatusCode != 202 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	got := sseData(sse(t, srv.URL, "live=0&from=all&filter="+url.QueryEscape(`{"session":"live-a"}`)))
	if strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Fatalf("delivered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
	}
}

// AEP-0003 §7: from replays strictly after the position, no duplicates.
func TestAEP0003_Resume(t *testing.T) { onEveryPlane(t, testAEP0003_Resume) }

func testAEP0003_Resume(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	postNDJSON(t, srv.URL, liveEvent("live-r", 0, "progress.status"), liveEvent("live-r", 1, "progress.status"), liveEvent("live-r", 2, "progress.status"))
	postNDJSON(t, srv.URL, liveEvent("live-r", 1, "progress.status")) // redelivery
	from := url.QueryEscape(`[{"session":"live-r","epoch":0,"seq":0}]`)
	got := sseData(sse(t, srv.URL, "live=0&from="+from))
	if len(got) != 2 || !strings.Contains(got[0], `"seq":1`) || !strings.Contains(got[1], `"seq":2`) {
		t.Fatalf("got %q", got)
	}
}

// AEP-0001 §8.2, AEP-0003 §6.4: a redacted-gated field never reaches a
// metadata-ceiling subscriber, on either binding.
func TestAEP0003_CaptureDownlevel(t *testing.T) { onEveryPlane(t, testAEP0003_CaptureDownlevel) }

func testAEP0003_CaptureDownlevel(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	postNDJSON(t, srv.URL, liveEvent("live-c", 0, "progress.status"))
	got := sseData(sse(t, srv.URL, "live=0&from=all&capture=metadata"))
	if len(got) != 1 || strings.Contains(got[0], "secret text") || !strings.Contains(got[0], `"capture":"metadata"`) {
		t.Fatalf("got %q", got)
	}
	c := dial(t, srv)
	c.hello()
	c.send(`{"type":"subscribe","id":"m","from":"all","capture":"metadata"}`)
	c.read()
	if ev := c.read(); strings.Contains(fmt.Sprint(ev), "secret text") {
		t.Fatalf("WS leaked: %v", ev)
	}
}

// AEP-0003 §6.5: subscribe rejection is in-band, from the closed set, and
// the connection survives it.
func TestAEP0003_SubscribeLimits(t *testing.T) { onEveryPlane(t, testAEP0003_SubscribeLimits) }

func testAEP0003_SubscribeLimits(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	c := dial(t, srv)
	c.hello()
	var ps []string
	for i := 0; i <= maxPositions; i++ {
		ps = append(ps, fmt.Sprintf(`{"session":"s%d","epoch":0,"seq":0}`, i))
	}
	c.send(`{"type":"subscribe","id":"big","from":[` + strings.Join(ps, ",") + `]}`)
	if f := c.read(); f["code"] != "limit-exceeded" || f["id"] != "big" {
		t.Fatalf("over-size from: %v", f)
	}
	c.send(`{"type":"subscribe","id":"bad","from":[{"epoch":"x"}]}`)
	if f := c.read(); f["code"] != "invalid-filter" || f["id"] != "bad" {
		t.Fatalf("malformed from: %v", f)
	}
	c.send(`{"type":"subscribe","id":"ok"}`)
	if f := c.read(); f["type"] != "subscribed" {
		t.Fatalf("the connection did not survive: %v", f)
	}
}

// AEP-0003 §4.1: roster answers with the id, one entry per claim, and is
// refused in-band on an emitter connection, which survives.
func TestAEP0003_Roster(t *testing.T) { onEveryPlane(t, testAEP0003_Roster) }

func testAEP0003_Roster(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	c := dial(t, srv)
	c.send(`{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"e"}}`)
	c.read()
	c.send(`{"type":"roster","id":"r1"}`)
	if f := c.read(); f["code"] != "unauthorized" || f["id"] != "r1" {
		t.Fatalf("emitter roster: %v", f)
	}
	c.send(`{"type":"ping"}`)
	if f := c.read(); f["type"] != "pong" {
		t.Fatalf("the connection did not survive: %v", f)
	}
}

// AEP-0003 §5: replay-all replays every held session from its earliest
// position, with no replay-exhausted.
func TestAEP0003_ReplayAll(t *testing.T) { onEveryPlane(t, testAEP0003_ReplayAll) }

func testAEP0003_ReplayAll(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	for i := 0; i < 6; i++ { // more than the 4-event buffer
		postNDJSON(t, srv.URL, liveEvent("live-e", i, "progress.status"))
	}
	lines := sse(t, srv.URL, "live=0&from=all")
	for _, l := range lines {
		if strings.Contains(l, "replay-exhausted") {
			t.Fatalf("spurious replay-exhausted: %q", lines)
		}
	}
	if got := sseData(lines); len(got) != 4 || !strings.Contains(got[0], `"seq":2`) {
		t.Fatalf("got %q", got)
	}
}

// AEP-0003 §5, §10 (evict): after eviction both bindings mark the
// exhaustion first, agree on the earliest held position, and deliver the
// posted bytes unchanged.
func TestAEP0003_EvictReplayExhaustedAndByteIdentity(t *testing.T) {
	onEveryPlane(t, testAEP0003_EvictReplayExhaustedAndByteIdentity)
}

func testAEP0003_EvictReplayExhaustedAndByteIdentity(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	var posted []string
	for i := 0; i < 7; i++ {
		posted = append(posted, liveEvent("live-x", i, "progress.status"))
	}
	postNDJSON(t, srv.URL, posted...)
	from := `[{"session":"live-x","epoch":0,"seq":0}]`
	lines := sse(t, srv.URL, "live=0&from="+url.QueryEscape(from))
	if lines[0] != ": replay-exhausted live-x 0:3" {
		t.Fatalf("SSE first line %q", lines[0])
	}
	sseGot := sseData(lines)
	c := dial(t, srv)
	c.hello()
	c.send(`{"type":"subscribe","id":"x","from":` + from + `}`)
	c.read()
	if f := c.read(); f["type"] != "replay-exhausted" || f["earliest"].(map[string]any)["seq"] != float64(3) {
		t.Fatalf("WS: %v", f)
	}
	for i, want := range posted[3:] {
		c.c.SetReadDeadline(deadline())
		_, b, err := c.c.ReadMessage()
		if err != nil || string(b) != want || sseGot[i] != want {
			t.Fatalf("event %d: WS %s / SSE %s; want the posted bytes %s", i, b, sseGot[i], want)
		}
	}
}

// AEP-0004 §4.1: control never flows on an unauthenticated binding.
func TestAEP0004_ControlAuthGate(t *testing.T) { onEveryPlane(t, testAEP0004_ControlAuthGate) }

func testAEP0004_ControlAuthGate(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv, tg := f.srv, f.tg
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/socket"
	if _, resp, err := websocket.DefaultDialer.Dial(u, nil); err == nil || resp.StatusCode != 401 {
		t.Fatalf("dial without a token: %v", err)
	}
	if len(tg.cmds) != 0 {
		t.Fatal("a command reached the target")
	}
}

// AEP-0004 §4.2, §7: relay-behalf refusal is a cause-correlated frame and
// never enters the addressed session's replay; an undeclared command type
// is refused unsupported.
func TestAEP0004_RelayBehalfRefusal(t *testing.T) { onEveryPlane(t, testAEP0004_RelayBehalfRefusal) }

func testAEP0004_RelayBehalfRefusal(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv, tg := f.srv, f.tg
	f.emit(t, "session.started", nil)
	c := dial(t, srv)
	c.hello()
	pause := `{"aep":"0.1","id":"REFUSED-CMD-1","type":"control.pause","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/op","agent":"op","session":"` + f.session + `"}`
	c.send(pause)
	if f := c.read(); f["code"] != "unsupported" || f["cause"] != "REFUSED-CMD-1" {
		t.Fatalf("undeclared command: %v", f)
	}
	c.send(strings.Replace(strings.Replace(pause, "control.pause", "control.attention.respond", 1), `"session":"`+f.session+`"`, `"session":"gone","data":{"answer":{"option":"x"}}`, 1))
	if f := c.read(); f["code"] != "no-route" || f["cause"] != "REFUSED-CMD-1" {
		t.Fatalf("no-route: %v", f)
	}
	for _, line := range sseData(sse(t, srv.URL, "live=0&from=all")) {
		if strings.Contains(line, `"REFUSED-CMD-1"`) {
			t.Fatalf("a refusal entered history: %s", line)
		}
	}
	if len(tg.cmds) != 0 {
		t.Fatal("a refused command reached the target")
	}
}

// A flood from one connection is refused in-band; the endpoint survives.
func TestFloodIsRefusedInBand(t *testing.T) { onEveryPlane(t, testFloodIsRefusedInBand) }

func testFloodIsRefusedInBand(t *testing.T, tp testPlane) {
	// The clock stands still: however slowly a loaded machine sends the
	// burst, the bucket refills nothing while it does.
	still := time.Now()
	f := newPlaneFixture(t, tp, bus.HubOptions{ReplayPerSession: 4, ReplaySessions: 8},
		Options{MaxBody: 64 << 10, now: func() time.Time { return still }})
	srv := f.srv
	c := dial(t, srv)
	c.hello()
	for i := 0; i < frameBurst+50; i++ {
		c.send(`{"type":"unknown-frame"}`)
	}
	if f := c.read(); f["code"] != "limit-exceeded" {
		t.Fatalf("got %v", f)
	}
	if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("endpoint down after a flood: %v", err)
	}
}

// Oversized frames and bodies get a close code or an HTTP status.
func TestOversizedInput(t *testing.T) { onEveryPlane(t, testOversizedInput) }

func testOversizedInput(t *testing.T, tp testPlane) {
	f := newTestEndpointOn(t, tp)
	srv := f.srv
	c := dial(t, srv)
	c.hello()
	c.c.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping","t":"`+strings.Repeat("x", 100<<10)+`"}`))
	c.c.SetReadDeadline(deadline())
	_, _, err := c.c.ReadMessage()
	var ce *websocket.CloseError
	if !asClose(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("got %v; want close 1009", err)
	}
}

func asClose(err error, target **websocket.CloseError) bool {
	ce, ok := err.(*websocket.CloseError)
	if ok {
		*target = ce
	}
	return ok
}

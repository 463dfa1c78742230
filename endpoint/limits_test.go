package endpoint

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// bigEvent is a valid event of about size bytes.
func bigEvent(id string, size int) string {
	return fmt.Sprintf(`{"aep":"0.1","id":%q,"type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://big/agent/b/session/b","agent":"b","session":"b","seq":0,"capture":"redacted","data":{"message":%q}}`,
		id, strings.Repeat("x", size))
}

// TestIngestCapsEachEvent: an event over the cap is refused with 413 and
// a detail naming the cap, alone or as one line of a batch (the batch is
// refused whole); a WebSocket frame over it closes with 1009.
func TestIngestCapsEachEvent(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{MaxEvent: 64 << 10})
	small, big := bigEvent("S", 100), bigEvent("B", 100<<10)
	tests := []struct {
		name, ct, body string
		line           int
	}{
		{"one event", "application/json", big, -1},
		{"a line of a batch", "application/x-ndjson", small + "\n" + big, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, f.srv.URL, tt.ct, tt.body)
			if code != http.StatusRequestEntityTooLarge || !strings.Contains(body.Detail, "65536 bytes (64 KiB)") {
				t.Fatalf("got %d %+v; want 413 naming the 64 KiB cap", code, body)
			}
			if tt.line >= 0 && (body.Line == nil || *body.Line != tt.line) {
				t.Fatalf("line %v; want %d", body.Line, tt.line)
			}
		})
	}
	if st := f.hub.Stats(); st.ReplayEvents != 0 {
		t.Fatalf("%d events held; want the refused batch to leave nothing", st.ReplayEvents)
	}
	if code, _ := post(t, f.srv.URL, "application/json", bigEvent("FITS", 60<<10)); code != 202 {
		t.Fatalf("an event under the cap: %d; want 202", code)
	}
	c := emitterConn(t, f.srv, "i")
	c.c.WriteMessage(websocket.TextMessage, []byte(big))
	c.c.SetReadDeadline(deadline())
	_, _, err := c.c.ReadMessage()
	var ce *websocket.CloseError
	if !asClose(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("got %v; want close 1009", err)
	}
}

// TestOpenQuestionsFromOutsideAreBoundedInBytes: past the open-question
// budget an ingested question is refused with 429, never by dropping an
// open one.
func TestOpenQuestionsFromOutsideAreBoundedInBytes(t *testing.T) {
	f := newFixture(t, bus.HubOptions{OpenBytes: 16 << 10, OpenShare: -1}, Options{}) // the total bound alone
	prompt := strings.Repeat("p", 3<<10)
	accepted := 0
	for i := range 20 {
		ev := fmt.Sprintf(`{"aep":"0.1","id":"Q%d","type":"attention.requested","time":"2026-01-01T00:00:00Z","source":"aep://r/agent/e","agent":"e","session":"r","seq":%d,"data":{"kind":"input","prompt":%q}}`, i, i, prompt)
		code, body := post(t, f.srv.URL, "application/json", ev)
		if code == http.StatusTooManyRequests {
			if body.Error != "limit-exceeded" || !strings.Contains(body.Detail, "16384 bytes") {
				t.Fatalf("refusal %+v; want limit-exceeded naming the bound", body)
			}
			break
		}
		if code != 202 {
			t.Fatalf("question %d: %d %+v", i, code, body)
		}
		accepted++
	}
	if st := f.hub.Stats(); accepted == 0 || accepted == 20 || st.Open != accepted {
		t.Fatalf("accepted %d, %d open; want the budget to refuse the rest and keep those", accepted, st.Open)
	}
}

// TestASilentPeerIsClosedAndReleased: a peer that answers no ping is
// closed after pongWait and the source it wrote is free again; a peer
// that reads (and so answers pings) stays.
//
// pongWait is long beside pingEvery so that the reading peer, however
// late a loaded machine schedules it, answers in time: the silent peer
// is closed by the missing pong, not the reading one by a slow one.
func TestASilentPeerIsClosedAndReleased(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{pingEvery: 20 * time.Millisecond, pongWait: 2 * time.Second})
	alive := dial(t, f.srv)
	alive.hello()
	aliveDone := make(chan struct{})
	go func() {
		defer close(aliveDone)
		for {
			if _, _, err := alive.c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	silent := emitterConn(t, f.srv, "silent")
	silent.c.SetPingHandler(func(string) error { return nil }) // never pongs
	const src = "aep://s/agent/e/session/x"
	if fr := silent.sendEvent(remoteEvent(src, "x", "E1", "session.started", "", 0)); fr != nil {
		t.Fatalf("event: %v", fr)
	}
	silent.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := silent.c.ReadMessage(); err != nil {
			break // the endpoint closed it
		}
	}
	<-f.released
	other := emitterConn(t, f.srv, "other")
	if fr := other.sendEvent(remoteEvent(src, "x", "E2", "session.started", "", 1)); fr != nil {
		t.Fatalf("the source after its writer was closed: %v; want it free", fr)
	}
	select {
	case <-aliveDone:
		t.Fatal("the reading peer was closed too")
	default:
	}
	alive.c.Close()
	<-aliveDone
}

// TestAGoneEmittersQuestionsLeaveTheOpenSet: a /socket emitter that leaves
// with questions open and does not come back within bus.OrphanWait loses
// them from the open set, and its source is free again; one that comes
// back with its resume secret in time keeps them; a joined bridge's dated
// question waits for its expires_at.
func TestAGoneEmittersQuestionsLeaveTheOpenSet(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	f := newFixture(t, bus.HubOptions{Now: clock.now}, Options{})
	ask := func(c *wsClient, src, session, id, expires string) {
		t.Helper()
		ev := remoteEvent(src, session, id, "attention.requested", "srv", 0)
		if expires != "" {
			ev = strings.Replace(ev, `"prompt":"p"`, `"prompt":"p","expires_at":"`+expires+`"`, 1)
		}
		if fr := c.sendEvent(ev); fr != nil {
			t.Fatalf("%s: %v", id, fr)
		}
	}
	gone, _ := emitterResuming(t, f.srv, "gone", "")
	ask(gone, "aep://g/agent/e/session/G", "G", "GONE", "")
	returning, secret := emitterResuming(t, f.srv, "returning", "")
	ask(returning, "aep://r/agent/e/session/R", "R", "BACK", "")
	bridge := joinConn(t, f.srv, "bridge")
	ask(bridge, "aep://b/agent/e/session/B", "B", "DATED", clock.now().Add(time.Hour).Format(time.RFC3339))
	for _, c := range []*wsClient{gone, returning, bridge} {
		c.c.Close()
		<-f.released
	}
	clock.advance(bus.OrphanWait - time.Second)
	emitterResuming(t, f.srv, "returning", secret) // back in time
	clock.advance(time.Second)
	sub, _ := f.hub.SubscribeFrom(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, bus.From{}, 8)
	var open []string
	for d := range sub.Backlog() {
		open = append(open, d.Event.ID)
	}
	sub.Close()
	if diff := cmp.Diff([]string{"BACK", "DATED"}, open); diff != "" {
		t.Fatalf("open questions (-want +got):\n%s", diff)
	}
	other := emitterConn(t, f.srv, "other")
	if fr := other.sendEvent(remoteEvent("aep://g/agent/e/session/G", "G", "NEW", "session.started", "", 1)); fr != nil {
		t.Fatalf("the gone emitter's source after its questions left: %v; want it free", fr)
	}
}

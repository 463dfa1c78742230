package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

// TestResumeAfterDroppedStreams: a POST's stream and the GET stream both
// drop; what the server sent meanwhile waits for the client, and a GET
// with Last-Event-ID resumes each stream where it broke.
func TestResumeAfterDroppedStreams(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient), StreamAfter: time.Millisecond})
	c := rawSession(t, g, "resumer", true)

	// The call's stream opens with a priming event; the client drops it.
	call := c.post(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"ask","arguments":{"message":"Resume me?"}}}`)
	prime, ok := events(t, call)()
	if !ok || prime.id == "" || prime.data != "" {
		t.Fatalf("the call's stream did not open with a priming event: %+v", prime)
	}
	call.Body.Close()
	if code, msg := status(t, c.post(`{"jsonrpc":"2.0","id":"call-1","method":"ping"}`)); code != http.StatusBadRequest || !strings.Contains(msg, "already in flight") {
		t.Errorf("a second request with the id in flight: got %d %q; want 400", code, msg)
	}

	// The question went out while no GET stream was open: the next GET
	// gets it. That stream drops too after one event.
	get := c.get("")
	ev, ok := events(t, get)()
	if !ok || !strings.Contains(ev.data, `"method":"elicitation/create"`) || !strings.Contains(ev.data, "Resume me?") {
		t.Fatalf("the GET stream's first event: %+v; want the elicitation", ev)
	}
	get.Body.Close()

	// Resuming the GET stream after its last event replays nothing old.
	// The client answers the question; the call's result is on the call's
	// stream, which the client resumes from its priming event.
	var serverID struct {
		ID any `json:"id"`
	}
	jsonUnmarshal(t, ev.data, &serverID)
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"action":"accept","content":{"environment":"staging","confirm":true}}}`, serverID.ID)
	if r := c.post(answer); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the client's answer: got %s; want 202", r.Status)
	}
	resumed := c.get(prime.id)
	next := events(t, resumed)
	res, ok := next()
	if !ok || !strings.Contains(res.data, `"id":"call-1"`) || !strings.Contains(res.data, `\"action\":\"accept\"`) {
		t.Fatalf("the resumed call stream: %+v; want the call's result", res)
	}
	if _, more := next(); more {
		t.Error("the resumed stream did not end after the response")
	}

	// An event id the session never gave, or from a stream it no longer
	// keeps, is refused.
	if code, msg := status(t, c.get("p999_0")); code != http.StatusBadRequest || !strings.Contains(msg, "names no stream") {
		t.Errorf("unknown Last-Event-ID: got %d %q; want 400", code, msg)
	}
}

// jsonUnmarshal decodes s into v, failing t on error.
func jsonUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := jsonDecode([]byte(s), v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
}

// TestSessionsCannotSeeOrAnswerEachOther: two sessions, each with a
// question pending at its client under the same server request id (each
// server numbers its own requests). Each answers that id in its own
// session, Bravo first: each server gets its own client's answer only,
// and no stream of one carries the other's messages.
func TestSessionsCannotSeeOrAnswerEachOther(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient), StreamAfter: time.Millisecond})
	type side struct {
		c      *raw
		marker string
		call   *http.Response
		ev     rawEvent
	}
	sides := []*side{{marker: "Alpha-question"}, {marker: "Bravo-question"}}
	for i, s := range sides {
		s.c = rawSession(t, g, fmt.Sprintf("client-%d", i), true)
		s.call = s.c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"message":%q}}}`, s.marker))
		get := s.c.get("")
		var ok bool
		if s.ev, ok = events(t, get)(); !ok {
			t.Fatalf("%s: no elicitation on the GET stream", s.marker)
		}
		get.Body.Close()
		if !strings.Contains(s.ev.data, s.marker) {
			t.Fatalf("%s's GET stream carried %s", s.marker, s.ev.data)
		}
	}
	a, b := sides[0], sides[1]
	// Both elicitations have server id 1 (each server numbers its own).
	// Bravo answers id 1 first, with Bravo's value, in Bravo's session.
	for _, s := range []*side{b, a} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"environment":"staging","reason":%q,"confirm":true}}}`, s.marker+"-answer")
		if r := s.c.post(body); r.StatusCode != http.StatusAccepted {
			t.Fatalf("%s's answer: got %s", s.marker, r.Status)
		}
	}
	for _, s := range sides {
		got := readAll(t, s.call)
		var text string
		for _, m := range got {
			if strings.Contains(m, `"result"`) {
				text = m
			}
		}
		other := a.marker
		if s == a {
			other = b.marker
		}
		if !strings.Contains(text, s.marker+"-answer") || strings.Contains(strings.Join(got, "\n"), other) {
			t.Errorf("%s's call stream carried %v; want only its own answer", s.marker, got)
		}
	}
}

// TestFiftySessions: 50 concurrent client sessions, each with its own
// upstream server; each question reaches the operator in the right AEP
// session with the right client, each answer reaches the right server,
// and nothing crosses sessions.
func TestFiftySessions(t *testing.T) {
	const n = 50
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteRemote), MaxSessions: n})
	w := g.watch()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	results := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := newMCPGoClient(ctx, g, fmt.Sprintf("client-%02d", i), "2025-11-25")
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			defer c.Close()
			r, err := callTool(ctx, c, "ask", map[string]any{"message": fmt.Sprintf("Question for client-%02d", i)})
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			results[i] = resultText(r)
		}()
	}
	w.waitFor(t, fmt.Sprintf("%d questions", n), func(w *watcher) bool { return len(w.questions) == n })
	w.mu.Lock()
	questions := append([]*aep.Event(nil), w.questions...)
	clients := make(map[string]string, len(w.clients))
	for k, v := range w.clients {
		clients[k] = v
	}
	w.mu.Unlock()
	seen := map[string]bool{}
	for _, q := range questions {
		var d aep.AttentionRequested
		jsonUnmarshal(t, string(q.Data), &d)
		name := strings.TrimPrefix(d.Prompt, "Question for ")
		if clients[q.Session] != name {
			t.Errorf("question %q is in the session of %q", d.Prompt, clients[q.Session])
		}
		if seen[q.Session] {
			t.Errorf("two questions in session %s", q.Session)
		}
		seen[q.Session] = true
		g.answer(t, q, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true, "reason": "answer for " + name}})
	}
	wg.Wait()
	for i, got := range results {
		if want := fmt.Sprintf("answer for client-%02d", i); !strings.Contains(got, want) {
			t.Errorf("client-%02d's server received %s; want %q", i, got, want)
		}
	}
	if len(seen) != n {
		t.Errorf("questions came from %d sessions; want %d", len(seen), n)
	}
}

// TestUnreadMessagesEndTheSession: a message of any size passes on a
// stream the client reads; messages for which it opens no stream wait
// within the byte bound, and past it the session ends, the call in
// flight answered with the reason.
func TestUnreadMessagesEndTheSession(t *testing.T) {
	g := startGateway(t, Options{Session: sessionOpts(elicit.RouteClient), MaxBuffered: 64})
	w := g.watch()
	c := rawSession(t, g, "never-reads", true)
	aepSession := w.sessionOf(t, "never-reads")
	// A message larger than the bound passes on a stream being read.
	big := strings.Repeat("b", 1000)
	if got := readAll(t, c.post(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"message":"`+big+`"}}}`)); len(got) != 1 || !strings.Contains(got[0], big) {
		t.Fatalf("a large echo: got %d messages; want its result", len(got))
	}
	// The question goes to the GET stream, which the client never opens.
	got := readAll(t, c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"message":"Anyone reading?"}}}`))
	if len(got) != 1 || !strings.Contains(got[0], `"error"`) || !strings.Contains(got[0], "unread") {
		t.Errorf("the call in flight: got %v; want an error saying messages went unread", got)
	}
	w.waitFor(t, "the session to end", func(w *watcher) bool { return w.ended[aepSession] != "" })
	if code, _ := status(t, c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); code != http.StatusNotFound {
		t.Errorf("after the session ended: got %d; want 404", code)
	}
}

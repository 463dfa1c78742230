package endpoint

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// noise posts sessions × perSession session-scoped events from other
// emitters, one NDJSON batch per session.
func noise(t *testing.T, base string, sessions, perSession int) {
	t.Helper()
	for s := range sessions {
		var lines []string
		for i := range perSession {
			lines = append(lines, remoteEvent(fmt.Sprintf("aep://noise/agent/n/session/n%d", s), fmt.Sprintf("n%d", s),
				fmt.Sprintf("N%d-%d", s, i), "session.started", "", i))
		}
		resp := postNDJSON(t, base, lines...)
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("noise batch %d: HTTP %d", s, resp.StatusCode)
		}
	}
}

// subscribeAll subscribes on a new connection and reads the subscribed
// frame and the backlog it announces.
func subscribeAll(t *testing.T, f *fixture, subscribe string) (open, replay int, events []map[string]any) {
	t.Helper()
	c := dial(t, f.srv)
	c.hello()
	c.send(subscribe)
	ack := c.read()
	if ack["type"] != "subscribed" {
		t.Fatalf("subscribe: %v", ack)
	}
	open, replay = int(ack["open"].(float64)), int(ack["replay"].(float64))
	for range open + replay {
		events = append(events, c.read())
	}
	return open, replay, events
}

// TestOpenQuestionsSurviveNoise replays the observed eviction: the
// bridge's own later events and one batch of 256 other sessions push its
// question out of replay; every way of looking still shows it, once.
func TestOpenQuestionsSurviveNoise(t *testing.T) { onEveryPlane(t, testOpenQuestionsSurviveNoise) }

func testOpenQuestionsSurviveNoise(t *testing.T, tp testPlane) {
	f := newPlaneFixture(t, tp, bus.HubOptions{}, Options{})
	q := emit(t, f.em, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: "mail ops@example.com?"})
	for range bus.DefaultReplayPerSession + 9 {
		emit(t, f.em, "progress.status", nil)
	}
	f.emit(t, "progress.status", nil) // the session's events arrive in order: all are there
	var lines []string
	for i := range bus.DefaultReplaySessions {
		lines = append(lines, remoteEvent(fmt.Sprintf("aep://noise/agent/n/session/n%d", i), fmt.Sprintf("n%d", i), fmt.Sprintf("N%d", i), "session.started", "", 0))
	}
	if resp := postNDJSON(t, f.srv.URL, lines...); resp.StatusCode != 202 {
		t.Fatalf("noise: HTTP %d", resp.StatusCode)
	}
	tests := []struct {
		name, subscribe string
		metadata        bool
	}{
		{"from all", `{"type":"subscribe","id":"a","filter":{"type":["attention.*","control.*"]},"from":"all"}`, false},
		{"live only, at metadata", `{"type":"subscribe","id":"a","capture":"metadata"}`, true},
		{"from the last position", `{"type":"subscribe","id":"a","filter":{"session":"` + f.session + `"},"from":[{"session":"` + f.session + `","epoch":0,"seq":1034}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, _, events := subscribeAll(t, f, tt.subscribe)
			n := 0
			for _, ev := range events {
				if ev["id"] == q.ID {
					n++
				}
			}
			prompt := events[0]["data"].(map[string]any)["prompt"].(string)
			if open != 1 || events[0]["id"] != q.ID || n != 1 || strings.Contains(prompt, "ops@") != !tt.metadata {
				t.Fatalf("open %d, first %v, %d copies; want the question first, once, at its ceiling", open, events[0], n)
			}
		})
	}
	lines = sse(t, f.srv.URL, "live=0&filter="+url.QueryEscape(`{"type":["attention.requested"]}`))
	if got := sseData(lines); len(got) != 1 || !strings.Contains(got[0], q.ID) || lines[0] != ": subscribed open=1 replay=0" {
		t.Fatalf("SSE snapshot: %q", lines)
	}
	qs, err := (&operator.Client{Endpoint: f.srv.URL, Token: testToken}).Pending(context.Background())
	if err != nil || len(qs) != 1 || qs[0].ID != q.ID {
		t.Fatalf("Pending: %v %v; want the question", qs, err)
	}
}

// TestTenThousandOpenQuestions: 10,000 questions across 100 sessions,
// some settled, behind 300 sessions of noise: Pending, a from:"all"
// subscription and SSE each show exactly the open ones.
func TestTenThousandOpenQuestions(t *testing.T) {
	f := newFixture(t, bus.HubOptions{}, Options{})
	want := map[string]bool{}
	for s := range 100 {
		em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "bridge", Session: fmt.Sprintf("q%d", s), Host: "h", Sinks: []bus.Sink{f.hub}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 101 {
			q := emit(t, em, "attention.requested", aep.AttentionRequested{Kind: "input", Prompt: fmt.Sprintf("question %d of %d", i, s)})
			if i == 100 { // one more per session, settled by its owner
				emit(t, em, "attention.resolved", aep.AttentionResolved{Resolution: "dismissed"}, q.ID)
				continue
			}
			want[q.ID] = true
		}
	}
	noise(t, f.srv.URL, 300, 4)
	qs, err := (&operator.Client{Endpoint: f.srv.URL, Token: testToken}).Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, q := range qs {
		if !want[q.ID] || seen[q.ID] {
			t.Fatalf("Pending listed %s: settled, unknown or twice", q.ID)
		}
		seen[q.ID] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("Pending listed %d; want %d", len(seen), len(want))
	}
	open, replay, events := subscribeAll(t, f, `{"type":"subscribe","id":"inbox","filter":{"type":["attention.*","control.*"]},"from":"all"}`)
	asked := map[string]int{}
	for i, ev := range events {
		if ev["type"] == "attention.requested" {
			asked[ev["id"].(string)]++
			if i >= open && want[ev["id"].(string)] {
				t.Fatalf("open question %s delivered again in the replay", ev["id"])
			}
		}
	}
	if open != len(want) || len(asked) < len(want) || replay == 0 {
		t.Fatalf("from all: open %d, replay %d, %d distinct questions; want %d open first", open, replay, len(asked), len(want))
	}
	for id := range want {
		if asked[id] != 1 {
			t.Fatalf("question %s delivered %d times; want once", id, asked[id])
		}
	}
}

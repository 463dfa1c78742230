package notify

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// hostTransport records which host each notification type went to.
type hostTransport struct {
	memTransport
	mu   sync.Mutex
	sent []string // "host type"
}

func (h *hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.sent = append(h.sent, r.URL.Host+" "+r.Header.Get(EventHeader))
	h.mu.Unlock()
	return h.memTransport.RoundTrip(r)
}

func (h *hostTransport) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.sent
	h.sent = nil
	slices.Sort(out)
	return out
}

// TestEscalation: a question still open Escalate before it expires is
// notified again, to the targets that want it and to their escalate_to,
// at exactly that time; one answered first is not.
func TestEscalation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &hostTransport{}
		w := newWorld(t, aep.CaptureRedacted, 10*time.Minute)
		done := make(chan struct{}, 16)
		w.start(t, Options{Escalate: 2 * time.Minute, Transport: tr, onDone: func() { done <- struct{}{} },
			Targets: []Target{
				{Name: "team", URL: "https://team.example/x", Format: Slack, EscalateTo: []string{"pager"}},
				{Name: "oncall", URL: "https://oncall.example/x", Format: Slack, Events: []Type{Expiring}},
				{Name: "pager", URL: "https://pager.example/topic", Format: Ntfy, Events: []Type{}},
			}})
		start := time.Now()
		id := w.ask(t, "s", "first", deploySchema)
		<-done
		if got, want := tr.take(), []string{"team.example question.opened"}; !cmp.Equal(got, want) {
			t.Fatalf("on open: %v; want %v", got, want)
		}
		for range 3 {
			<-done
		}
		if at := time.Since(start); at != 8*time.Minute {
			t.Errorf("escalated after %s; want 8m (10m timeout − 2m)", at)
		}
		want := []string{"oncall.example question.expiring", "pager.example question.expiring", "team.example question.expiring"}
		if got := tr.take(); !cmp.Equal(got, want) {
			t.Errorf("escalation went to %v; want %v", got, want)
		}
		w.answer(t, id, aep.Answer{Values: map[string]any{"env": "staging"}})
		<-done
		if got, want := tr.take(), []string{"team.example question.answered"}; !cmp.Equal(got, want) {
			t.Errorf("on answer: %v; want %v", got, want)
		}

		second := w.ask(t, "s", "second", deploySchema)
		<-done
		tr.take()
		w.answer(t, second, aep.Answer{Values: map[string]any{"env": "staging"}})
		<-done
		time.Sleep(20 * time.Minute) // the fake clock passes where its escalation would have been
		synctest.Wait()
		if got, want := tr.take(), []string{"team.example question.answered"}; !cmp.Equal(got, want) {
			t.Errorf("an answered question escalated: %v; want only %v", got, want)
		}
	})
}

// TestRouterAddsTargets: a Router (here a fake standing in for a policy's
// approvers) sends a question to further targets, which get its
// notifications; a question it does not route reaches them not; a target
// it returns that fails the URL check is refused and logged.
func TestRouterAddsTargets(t *testing.T) {
	t.Parallel()
	alice, team := newReceiver(t, nil), newReceiver(t, nil)
	log, buf := logBuffer()
	var asked []Question
	var mu sync.Mutex
	router := RouterFunc(func(q Question) []Target {
		mu.Lock()
		asked = append(asked, q)
		mu.Unlock()
		if q.Server != "deploy" {
			return nil
		}
		return []Target{{Name: "operator:alice", URL: alice.srv.URL + "/alice", Secret: testSecret},
			{Name: "operator:mallory", URL: "http://mallory.example/hook", Format: Slack}}
	})
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	n := w.start(t, Options{Targets: []Target{{Name: "team", URL: team.srv.URL, Secret: testSecret}}, Router: router, Logger: log})
	other := w.ask(t, "other", "not for alice", deploySchema)
	deploy := w.ask(t, "deploy", "for alice", deploySchema)
	w.answer(t, other, aep.Answer{Values: map[string]any{"env": "staging"}})
	w.answer(t, deploy, aep.Answer{Option: "decline"})
	g := decode(t, alice.waitType(t, Opened).Body)
	if path(g, "question", "id") != deploy {
		t.Errorf("alice got question %v; want %s", path(g, "question", "id"), deploy)
	}
	alice.waitType(t, Declined)
	buf.WaitFor(t, "a routed notification target is refused", waitLimit)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if alice.count() != 2 || team.count() != 4 {
		t.Errorf("alice got %d notifications, the team %d; want 2 (deploy's) and 4", alice.count(), team.count())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[1].ID != deploy || asked[1].Client != "claude-code 2.1" || asked[1].Kind != "form" {
		t.Errorf("the router was asked %+v", asked)
	}
	var routed []string
	for _, s := range n.Stats() {
		if s.Routed {
			routed = append(routed, s.Target)
		}
	}
	if !cmp.Equal(routed, []string{"operator:alice"}) {
		t.Errorf("routed targets %v; want [operator:alice]", routed)
	}
}

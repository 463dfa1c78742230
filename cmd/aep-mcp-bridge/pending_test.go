package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
)

// acking takes commands and acks them, as a session's intake does.
type acking struct{ em *bus.Emitter }

func (a acking) Submit(cmd aep.Event, _ control.Sender) (string, string) {
	a.em.Emit(aep.Draft{Type: "control.accepted", Cause: cmd.ID, Capture: aep.CaptureMetadata})
	return "", ""
}

// postEvents posts an NDJSON batch with the token and returns the status.
func postEvents(t *testing.T, base string, lines ...string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/events", strings.NewReader(strings.Join(lines, "\n")))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("AEP-Version", "0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPendingListsEveryOpenQuestionAfterNoise: 2,000 questions across 20
// sessions (20 settled), a forged settlement, then 300 sessions of
// ingested noise: pending lists exactly the open ones, and the oldest,
// long gone from replay, is still answered by respond.
func TestPendingListsEveryOpenQuestionAfterNoise(t *testing.T) {
	hub := bus.NewHub()
	ep, _ := endpoint.New(endpoint.Options{Token: "tok", Hub: hub})
	srv := httptest.NewServer(ep.Handler())
	defer srv.Close()
	defer ep.Close()
	open := map[string]bool{}
	var first aep.Event
	for s := range 20 {
		em, _ := bus.NewEmitter(bus.EmitterOptions{Agent: "b", Session: fmt.Sprintf("q%d", s), Sinks: []bus.Sink{hub}})
		ep.AddClaim(endpoint.Claim{Session: em.Session(), Source: em.Source(), Agent: "b", Accepts: []string{"control.attention.respond"}, Target: acking{em}})
		for i := range 101 {
			q, _, err := em.Emit(aep.Draft{Type: "attention.requested", Subject: "srv", Capture: aep.CaptureRedacted,
				Data: aep.AttentionRequested{Kind: "form", Prompt: fmt.Sprintf("question %d", i), RespondVia: []string{"control"}}})
			if err != nil {
				t.Fatal(err)
			}
			if s == 0 && i == 0 {
				first = q
			}
			if i == 100 {
				em.Emit(aep.Draft{Type: "attention.resolved", Subject: q.ID, Cause: q.ID, Data: aep.AttentionResolved{Resolution: "dismissed"}})
				continue
			}
			open[q.ID] = true
		}
	}
	forged := fmt.Sprintf(`{"aep":"0.1","id":"FORGED","type":"attention.resolved","subject":%q,"time":"2026-01-01T00:00:00Z","source":%q,"agent":"b","session":%q,"seq":7777,"data":{"resolution":"answered"}}`,
		first.ID, first.Source, first.Session)
	if code := postEvents(t, srv.URL, forged); code != http.StatusForbidden {
		t.Fatalf("a forged settlement of a local question: HTTP %d; want 403", code)
	}
	for s := range 300 {
		var lines []string
		for i := range 4 {
			lines = append(lines, fmt.Sprintf(`{"aep":"0.1","id":"N%d-%d","type":"session.started","time":"2026-01-01T00:00:00Z","source":"aep://noise/agent/n/session/n%d","agent":"n","session":"n%d","seq":%d}`, s, i, s, s, i))
		}
		if code := postEvents(t, srv.URL, lines...); code != http.StatusAccepted {
			t.Fatalf("noise: HTTP %d", code)
		}
	}
	base := []string{"--endpoint", srv.URL, "--token", "tok"}
	out, errOut, code := cli(t, append([]string{"pending", "--json"}, base...)...)
	var qs []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &qs) != nil {
		t.Fatalf("pending --json: exit %d %s", code, errOut)
	}
	listed := map[string]bool{}
	for _, q := range qs {
		if !open[q.ID] || listed[q.ID] {
			t.Fatalf("pending listed %s: settled, unknown or twice", q.ID)
		}
		listed[q.ID] = true
	}
	if len(listed) != len(open) || qs[0].ID != first.ID {
		t.Fatalf("pending listed %d, first %s; want all %d, the oldest (%s) first", len(listed), qs[0].ID, len(open), first.ID)
	}
	if out, _, _ := cli(t, append([]string{"pending"}, base...)...); strings.Count(out, "\n") != len(open)+1 {
		t.Fatalf("pending printed %d lines; want a header and %d questions", strings.Count(out, "\n"), len(open))
	}
	if _, errOut, code := cli(t, append([]string{"respond", first.ID, "--decline"}, base...)...); code != 0 {
		t.Fatalf("respond to the oldest question: exit %d %s; want accepted", code, errOut)
	}
}

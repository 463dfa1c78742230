package bus

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func TestServerOfSessions(t *testing.T) {
	t.Parallel()
	ask := func(session, server string) aep.Event {
		return aep.Event{Type: "attention.requested", Session: session, Subject: server}
	}
	other := func(session, typ string) aep.Event { return aep.Event{Type: typ, Session: session, Subject: "q1"} }
	type want struct {
		session, server string
		known           bool
	}
	tests := []struct {
		name   string
		events []aep.Event
		want   []want
	}{
		{"nothing asked yet", []aep.Event{other("s", "session.started")}, []want{{"s", "", false}}},
		{"the first question names it", []aep.Event{other("s", "session.started"), ask("s", "deploy-web"), other("s", "attention.answered")},
			[]want{{"s", "deploy-web", true}}},
		{"the same server again", []aep.Event{ask("s", "a"), ask("s", "a")}, []want{{"s", "a", true}}},
		{"two servers: mixed, for good", []aep.Event{ask("s", "a"), ask("s", "b"), ask("s", "a")}, []want{{"s", "", false}}},
		{"sessions apart", []aep.Event{ask("s1", "a"), ask("s2", "b")}, []want{{"s1", "a", true}, {"s2", "b", true}}},
		{"an empty subject names none", []aep.Event{ask("s", "")}, []want{{"s", "", false}}},
		{"a name too long names none", []aep.Event{ask("s", strings.Repeat("x", MaxServerName+1))}, []want{{"s", "", false}}},
		{"no session", []aep.Event{ask("", "a")}, []want{{"", "", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHub()
			for _, ev := range tc.events {
				h.Write(ev, []byte("{}"))
			}
			for _, w := range tc.want {
				if server, known := h.ServerOf(w.session); server != w.server || known != w.known {
					t.Errorf("ServerOf(%q) = %q, %v; want %q, %v", w.session, server, known, w.server, w.known)
				}
			}
		})
	}
}

// TestServerOfForgetsTheLeastRecentlyActive: past MaxServerSessions, the
// session active longest ago is forgotten (its events then have no known
// server), not one that keeps emitting.
func TestServerOfForgetsTheLeastRecentlyActive(t *testing.T) {
	t.Parallel()
	s := newServers()
	s.observe(&aep.Event{Type: "attention.requested", Session: "old", Subject: "a"})
	s.observe(&aep.Event{Type: "attention.requested", Session: "busy", Subject: "b"})
	for i := range MaxServerSessions - 1 {
		s.observe(&aep.Event{Type: "attention.requested", Session: fmt.Sprint(i), Subject: "c"})
		s.observe(&aep.Event{Type: "progress", Session: "busy"})
	}
	if _, known := s.of("old"); known {
		t.Errorf("the least recently active session is still known")
	}
	if server, known := s.of("busy"); !known || server != "b" {
		t.Errorf("an active session was forgotten: %q %v", server, known)
	}
	if s.lru.Len() != MaxServerSessions {
		t.Errorf("%d sessions remembered; want %d", s.lru.Len(), MaxServerSessions)
	}
}

// TestServerOfIsKnownToTheFilterOfTheQuestionThatNamesIt: a subscriber's
// filter, asked about a session's first question, already knows the
// session's server.
func TestServerOfIsKnownToTheFilterOfTheQuestionThatNamesIt(t *testing.T) {
	t.Parallel()
	h := NewHub()
	var got []string
	sub := h.Subscribe(func(ev *aep.Event) bool {
		server, known := h.ServerOf(ev.Session)
		got = append(got, fmt.Sprintf("%s %s %v", ev.Type, server, known))
		return known
	}, 0)
	defer sub.Close()
	h.Write(aep.Event{Type: "session.started", Session: "s"}, []byte("{}"))
	h.Write(aep.Event{Type: "attention.requested", Session: "s", Subject: "deploy"}, []byte("{}"))
	want := []string{"session.started  false", "attention.requested deploy true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the filter saw %q; want %q", got, want)
	}
}

package bus

import (
	"container/list"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Which MCP server a session fronts is what a scoped operator's view
// depends on (package authority), and only a session's questions say it:
// attention.requested's subject is the asking server's name (DESIGN,
// identity on the bus). The hub learns it from each session's questions
// as it publishes them, before any subscriber is asked about the event,
// so live delivery, replay and the open-question snapshot judge every
// event of a session by the same answer.
//
//   - A session's server is the subject of its first question. A session
//     whose questions name two servers (two emitters that picked the same
//     session name, say) names none from then on: it is mixed.
//   - Events of a session before its first question, of a mixed session,
//     of a session forgotten (the hub remembers the most recently active
//     MaxServerSessions) and of no session have no known server. Scoped
//     views leave them out: failing closed.
//   - A name longer than MaxServerName bytes names no server either, nor
//     does a session id that long, so the index is bounded in bytes too.

// Bounds of what the hub remembers of sessions' servers.
const (
	MaxServerSessions = 16384
	MaxServerName     = 256
)

// servers is the hub's index of sessions' servers. It has its own lock,
// taken after the hub's when the hub holds its own (publishing, and the
// filters it runs), so a filter may ask it while the hub delivers.
type servers struct {
	// mu guards the fields below.
	mu       sync.Mutex
	sessions map[string]*list.Element // of *serverOf
	lru      *list.List               // most recently active at the front
}

type serverOf struct {
	session, server string
	mixed           bool
}

func newServers() *servers {
	return &servers{sessions: map[string]*list.Element{}, lru: list.New()}
}

// observe learns from ev, which the hub is about to publish.
func (s *servers) observe(ev *aep.Event) {
	if ev.Session == "" || len(ev.Session) > MaxServerName {
		return // a session id that long (none of a bridge's) names no server
	}
	asks := ev.Type == typeRequested
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[ev.Session]
	switch {
	case ok:
		s.lru.MoveToFront(e)
		if so := e.Value.(*serverOf); asks && !so.mixed && so.server != ev.Subject {
			so.server, so.mixed = "", true
		}
		return
	case !asks:
		return
	}
	so := &serverOf{session: ev.Session, server: ev.Subject}
	if ev.Subject == "" || len(ev.Subject) > MaxServerName {
		so.server, so.mixed = "", true
	}
	s.sessions[ev.Session] = s.lru.PushFront(so)
	if s.lru.Len() > MaxServerSessions {
		old := s.lru.Back()
		s.lru.Remove(old)
		delete(s.sessions, old.Value.(*serverOf).session)
	}
}

// of returns the server session fronts, and whether it is known.
func (s *servers) of(session string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[session]
	if !ok {
		return "", false
	}
	so := e.Value.(*serverOf)
	return so.server, !so.mixed
}

// ServerOf returns the MCP server session fronts (the subject its
// questions named), and whether it is known: false before the session's
// first question, when its questions named two servers, when the hub
// forgot it, and for "". It may be called from a subscription's filter.
func (h *Hub) ServerOf(session string) (string, bool) { return h.servers.of(session) }

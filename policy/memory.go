package policy

import (
	"container/list"
	"errors"
	"sync"
	"time"
)

// DefaultMemoryGrants is how many session grants a Memory keeps when
// NewMemory is given 0.
const DefaultMemoryGrants = 10_000

// Memory keeps allow-session grants: the (session, rule, digest) triples
// operators allowed for the rest of a session. It is bounded: past its
// size it forgets the oldest grant, which only means that call asks
// again. A Memory is safe for concurrent use.
type Memory struct {
	max int

	// mu guards the fields below.
	mu sync.Mutex
	// grants maps a key to its element in order.
	grants map[memKey]*list.Element
	// order holds *Grant, oldest first.
	order *list.List
}

type memKey struct{ session, rule, digest string }

// NewMemory returns a Memory of at most max grants; 0 means
// DefaultMemoryGrants.
func NewMemory(max int) *Memory {
	if max <= 0 {
		max = DefaultMemoryGrants
	}
	return &Memory{max: max, grants: map[memKey]*list.Element{}, order: list.New()}
}

// Remember keeps a ScopeSession grant. A newer grant for the same
// session, rule and digest replaces the older.
func (m *Memory) Remember(g *Grant) error {
	if g == nil || g.Scope != ScopeSession {
		return errors.New("remembering a grant: only an allow-session grant is remembered; a call grant covers its own call")
	}
	k := memKey{g.Session, g.Rule, g.Digest}
	c := *g
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.grants[k]; e != nil {
		m.order.Remove(e)
	}
	m.grants[k] = m.order.PushBack(&c)
	for m.order.Len() > m.max {
		old := m.order.Remove(m.order.Front()).(*Grant)
		delete(m.grants, memKey{old.Session, old.Rule, old.Digest})
	}
	return nil
}

// Lookup returns the grant that lets a call pass without asking: d is the
// policy's decision for it (an Ask), in session, with the arguments'
// digest, at now. A grant whose rule changed (another RuleHash) or that
// expired is forgotten.
func (m *Memory) Lookup(d Decision, session, digest string, now time.Time) (Grant, bool) {
	if d.Action != Ask {
		return Grant{}, false
	}
	k := memKey{session, d.Rule, digest}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.grants[k]
	if e == nil {
		return Grant{}, false
	}
	g := e.Value.(*Grant)
	if !g.Covers(d, session, digest, now) {
		m.order.Remove(e)
		delete(m.grants, k)
		return Grant{}, false
	}
	return *g, true
}

// ForgetSession forgets every grant of a session; call it when the
// session ends.
func (m *Memory) ForgetSession(session string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.grants {
		if k.session == session {
			m.order.Remove(e)
			delete(m.grants, k)
		}
	}
}

// Len is how many grants the memory keeps.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}

package plane

import (
	"context"
	"fmt"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// Local is the operator plane of one process: one hub that every member
// serves, and commands routed in the process. It is the default, with no
// service to run; every member of it is a front door of the same state,
// which lives and dies with the process.
//
// A Local is safe for concurrent use.
type Local struct {
	hub *bus.Hub

	// mu guards claims.
	mu     sync.Mutex
	claims map[string]localClaim
}

type localClaim struct {
	b Binding
	t Target
}

// NewLocal returns an empty plane whose hub has the bounds of o.
func NewLocal(o bus.HubOptions) *Local {
	return &Local{hub: bus.NewHubWith(o), claims: map[string]localClaim{}}
}

// Join returns a member of the plane. Every member shares its state.
func (l *Local) Join() Member { return localMember{l} }

// Close ends every subscription of the plane's hub.
func (l *Local) Close() { l.hub.Close() }

type localMember struct{ l *Local }

func (m localMember) Hub() *bus.Hub { return m.l.hub }

func (m localMember) Sink() Sink { return m.l.hub }

func (m localMember) Claim(b Binding, t Target) error {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if _, taken := m.l.claims[b.Session]; taken {
		return fmt.Errorf("session %q is already claimed on this plane", b.Session)
	}
	m.l.claims[b.Session] = localClaim{b: b, t: t}
	return nil
}

func (m localMember) Release(session string) {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	delete(m.l.claims, session)
}

func (m localMember) Command(_ context.Context, from Principal, cmd *aep.Event, raw []byte) (string, string) {
	if code, detail := mayCommand(from); code != "" {
		return code, detail
	}
	m.l.mu.Lock()
	c, ok := m.l.claims[cmd.Session]
	m.l.mu.Unlock()
	if !ok {
		return "no-route", fmt.Sprintf("no session %q on this plane takes commands", cmd.Session)
	}
	out := c.t.Submit(*cmd, raw, from)
	return out.Code, out.Detail
}

func (m localMember) Sessions() []Binding {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	out := make([]Binding, 0, len(m.l.claims))
	for _, c := range m.l.claims {
		out = append(out, c.b)
	}
	return out
}

func (m localMember) Close(context.Context) error { return nil }

package policy

import "sync"

// Reloader keeps the policy in force across reloads: a document that does
// not load leaves the last good policy in force. It does no I/O; the
// caller reads the file (on a change, on SIGHUP) and hands the bytes to
// Load. A Reloader is safe for concurrent use.
type Reloader struct {
	// mu guards the fields below.
	mu      sync.Mutex
	current *Policy
	// lastErr is why the latest Load failed, or nil after a good one.
	lastErr error
}

// NewReloader parses the starting document. A bridge that cannot load its
// policy must not start, so a bad document is an error here, not a
// fallback.
func NewReloader(data []byte) (*Reloader, error) {
	p, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return &Reloader{current: p}, nil
}

// Policy is the policy in force. Decisions made with it keep its revision
// whatever reloads later.
func (r *Reloader) Policy() *Policy {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// Err is why the latest Load failed, or nil when it loaded (or none was
// tried since the start).
func (r *Reloader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Load parses data as the new policy. When it loads, it is in force and
// changed says whether its revision differs from the one before. When it
// does not, the policy in force stays, and the error (a *ParseError)
// says why and what to fix; the returned policy is the one still in force.
func (r *Reloader) Load(data []byte) (p *Policy, changed bool, err error) {
	next, err := Parse(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.lastErr = err
		return r.current, false, err
	}
	r.lastErr = nil
	changed = r.current == nil || next.Revision() != r.current.Revision()
	if changed {
		r.current = next
	}
	return r.current, changed, nil
}

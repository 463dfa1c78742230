package authority

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"sync"
)

// Bounds of what the table remembers.
const (
	// MaxSourcesPerConn bounds the sources one connection writes (a relay
	// link writes one per session of its bridge), and the sessions one
	// /join connection writes.
	MaxSourcesPerConn = 4096
	// RetiredLocal is how many ended sessions of this process stay
	// reserved, so nobody writes into their history after them.
	RetiredLocal = 4096
	// RetiredJoined is how many sessions whose joined bridges all left
	// stay reserved for them.
	RetiredJoined = 4096
)

// Questions is what the table asks of the open questions (bus.Hub): it
// keeps a source held while it has some, drops those that were never a
// joined bridge's to settle, and tells when an emitter leaves and comes
// back. The table calls it with its lock held; it must not call the table.
type Questions interface {
	OpenFrom(source string) int
	DropOpen(session string, drop func(source string) bool) int
	Left(writer string, keepDated bool)
	Back(writer string)
}

// Table is who writes which session and source, and who takes a
// session's commands (see the package documentation for the rules). L is
// what a session of this process routes its commands to, P what a
// connection is to its caller (the endpoint's socket).
//
// A Table is safe for concurrent use: one lock guards it all.
type Table[L, P any] struct {
	q Questions

	// mu guards everything below, and every Conn's fields.
	mu sync.Mutex
	// claims are who takes each session's commands, in the order they
	// claimed it (the roster's order).
	claims []claim[L, P]
	// local and localSources are reserved for this process's sessions,
	// live and the most recently ended (retired, oldest first).
	local        map[string]bool
	localSources map[string]bool
	retired      []localSession
	// sources maps a source to the connection that writes it.
	sources map[string]*holder[P]
	// joined are the sessions bridges joined to this endpoint write, live
	// or among the RetiredJoined most recently left (retirements numbers
	// them).
	joined        map[string]*joinedSession
	joinedRetired []retiredSession
	retirements   uint64
	// writers counts the live connections of each emitter (Conn.Writer).
	writers map[string]int
}

// NewTable returns an empty table that asks q about open questions.
func NewTable[L, P any](q Questions) *Table[L, P] {
	return &Table[L, P]{q: q, local: map[string]bool{}, localSources: map[string]bool{},
		sources: map[string]*holder[P]{}, joined: map[string]*joinedSession{}, writers: map[string]int{}}
}

// Conn is one connection as the table knows it. Its fields are guarded by
// the table's lock.
type Conn[P any] struct {
	// Peer is the caller's own value for the connection; it never changes.
	Peer P

	principal       Principal
	hello           bool
	agent, instance string
	resume          string // the resume secret; never logged
	writer          string
	sources         int             // the sources it writes
	sessions        map[string]bool // the sessions it writes through /join
}

// Hello is what a connection said about itself in its hello (AEP-0003 §4).
type Hello struct {
	// Emitter is set when it said hello as an emitter (or both).
	Emitter bool
	// Agent and Instance are public: they prove nothing.
	Agent, Instance string
	// Resume is the resume secret the connection presented or was given,
	// for an emitter; "" otherwise.
	Resume string
}

// holder is the connection that writes a source.
type holder[P any] struct {
	conn            *Conn[P] // nil while its emitter reconnects with questions open
	agent, instance string
	// resume is the writer's resume secret, and joined whether it came
	// through /join: what a connection must match to take the source back.
	resume string
	joined bool
	// sessions counts the joined sessions bound to this source that are
	// remembered: while there is one, the source stays held for its
	// bridge, open questions or not.
	sessions int
}

// joinedSession is a session that a bridge joined to this endpoint writes.
type joinedSession struct {
	source string // the source it is bound to: the first a joined connection wrote it under
	// resume is the resume secret of the connection that first wrote it:
	// only a /join connection presenting it writes the session.
	resume  string
	live    int    // joined connections writing it now
	retired uint64 // the retirement that reserves it once live is 0
}

// retiredSession is a joined session's retirement, oldest first.
type retiredSession struct {
	session string
	n       uint64
}

// localSession is an ended session of this process, still reserved.
type localSession struct{ session, source string }

// Connect registers a connection of principal p, whose caller calls it
// peer. Call Disconnect when it can send nothing more.
func (t *Table[L, P]) Connect(p Principal, peer P) *Conn[P] {
	c := &Conn[P]{Peer: peer, principal: p}
	if p.Proved {
		c.sessions = map[string]bool{}
	}
	return c
}

// Principal returns who acts on c.
func (t *Table[L, P]) Principal(c *Conn[P]) Principal {
	t.mu.Lock()
	defer t.mu.Unlock()
	return c.principal
}

// SayHello records c's hello: a consumer loses the right to emit. An
// emitter's questions are held for it again if it left them (Questions.Back).
func (t *Table[L, P]) SayHello(c *Conn[P], h Hello) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.hello, c.agent, c.instance = true, h.Agent, h.Instance
	if !h.Emitter {
		c.principal.Rights &^= Emit
		return
	}
	c.resume = h.Resume
	c.writer = writerOf(c.principal.Key, h.Resume)
	t.writers[c.writer]++
	t.q.Back(c.writer)
}

// writerOf names an emitter to the open questions (bus.Hub.IngestFrom):
// by the session key it proved, or else by a digest of its resume secret,
// which stays the same across its reconnects and reveals nothing of it.
func writerOf(key, resume string) string {
	if key != "" {
		return "key " + key
	}
	sum := sha256.Sum256([]byte(resume))
	return "emitter " + hex.EncodeToString(sum[:16])
}

// Writer names c's emitter to the open questions, or "" before an
// emitter's hello.
func (t *Table[L, P]) Writer(c *Conn[P]) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return c.writer
}

// Disconnect forgets what c wrote once it can send nothing more: its
// claims go; a source with open questions stays held for its emitter, and
// a joined bridge's sessions and sources for it. When c was its emitter's
// last live connection, its open questions wait for it to come back
// (Questions.Left; a joined bridge's dated ones wait for their expiry).
func (t *Table[L, P]) Disconnect(c *Conn[P]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.claims = slices.DeleteFunc(t.claims, func(cl claim[L, P]) bool { return cl.conn == c })
	if c.writer != "" {
		if t.writers[c.writer]--; t.writers[c.writer] <= 0 {
			delete(t.writers, c.writer)
			t.q.Left(c.writer, c.principal.Proved)
		}
		c.writer = "" // a second Disconnect does nothing
	}
	t.leaveSessionsLocked(c)
	for src, h := range t.sources {
		if h.conn == c {
			h.conn = nil
		}
		t.forgetIdleLocked(src, h) // and those whose questions left since
	}
}

// sameSecret compares resume secrets in constant time; an empty one
// matches nothing.
func sameSecret(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Stats counts what the table remembers, each bounded (see the constants).
type Stats struct {
	// Claims are the live claims; LocalSessions the sessions of this
	// process reserved, live and retired.
	Claims, LocalSessions int
	// Sources are the sources held, by a live connection or for one that
	// is away; JoinedSessions the sessions bound to a joined bridge.
	Sources, JoinedSessions int
	// Writers are the emitters with a live connection.
	Writers int
}

// Stats returns what the table remembers now.
func (t *Table[L, P]) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{Claims: len(t.claims), LocalSessions: len(t.local), Sources: len(t.sources),
		JoinedSessions: len(t.joined), Writers: len(t.writers)}
}

package bus

import (
	"container/list"
	"encoding/json"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Attention lifecycle types that settle a question (AEP-0002 §7 rule 2):
// once one arrives from the question's owner, the question is no longer
// open.
const (
	typeRequested = "attention.requested"
	typeAnswered  = "attention.answered"
	typeResolved  = "attention.resolved"
	typeTimeout   = "attention.timeout"
	typeDismissed = "attention.dismissed"
	typeEnded     = "session.ended"
)

// TypeQuestionVote is the event a permission request's owner emits for
// each approval that counted while more are needed (attention.TypeVote):
// who has approved so far, and how many the rule needs. It is part of
// the question's state, not only its history: the open set keeps the
// latest one of each open question beside it, and every subscription
// gets it right after the question, whatever replay has evicted, so an
// operator who connects late still reads "1 of 2".
const TypeQuestionVote = "x.aep-mcp-bridge.permission.vote"

// IsLifecycle reports whether t is a lifecycle event of a question that
// only the question's owner may emit: attention.answered, .resolved
// (dismissals included) and .timeout (AEP-0002 §7), and
// attention.dismissed, which AEP 0.1 spells as attention.resolved with
// resolution dismissed but which a consumer would read as the same: it is
// the owner's alone too, though it does not settle the question.
func IsLifecycle(t string) bool {
	return t == typeAnswered || t == typeResolved || t == typeTimeout || t == typeDismissed
}

// ExpiredGrace is how long past its expires_at a question stays open. An
// owner that is alive times its question out at expires_at (the bridge
// does); one still open a minute later belongs to an emitter that is gone
// without a word (a process killed, a host lost), and nobody can answer it
// any more, so it leaves the open set. The history keeps it.
const ExpiredGrace = time.Minute

// DefaultSettledOwners is how many settled questions keep their owner, so
// that their lifecycle stays the owner's after they leave the open set.
const DefaultSettledOwners = 4096

// openQuestion is one question that has no terminal yet: its original
// attention.requested, kept whole until its owner settles it.
type openQuestion struct {
	d    *Delivery
	key  string // (source, id): the question's identity (AEP-0001 §7.4)
	sess string // sessionKey of the owner
	// writer is who put it in the hub (writers.go): "" for the
	// process's own sessions.
	writer string
	size   int64
	elem   *list.Element // in openSet.order
	// vote is the owner's latest TypeQuestionVote for it, or nil; size
	// counts it.
	vote *Delivery
	// expires is the question's expires_at; zero when it has none.
	expires time.Time
}

// openSet is the state of every open question the hub serves, in the order
// they were asked. It is not history: a question leaves it when its owner
// (the same source and session) settles it with attention.resolved or
// attention.timeout, or ends the session, and otherwise only once nobody
// can answer it any more: ExpiredGrace past its expires_at, or when its
// writer left without coming back (writers.go).
//
// The owners (source and session) of the most recently settled questions
// are kept too, at most keepSettled of them, oldest forgotten first: an
// attention.answered for a question already settled is still its owner's
// alone, so nobody can put a forged answer into its history.
//
// An openSet is guarded by its hub's mutex.
type openSet struct {
	// keepSettled bounds settled; 0 means DefaultSettledOwners.
	keepSettled int
	// settled maps the id of a recently settled question to its owner;
	// settledOrder holds the same ids, oldest first.
	settled      map[string]settledOwner
	settledOrder []string
	byKey        map[string]*openQuestion
	// byID finds a question by its id alone, as consumers and commands
	// address it (subject); ids are ULIDs, and the hub refuses an ingested
	// question whose id another owner's open question already has.
	byID       map[string]*openQuestion
	order      *list.List // of *openQuestion, oldest first
	perSession map[string]int
	perSource  map[string]int
	bytes      int64
	// writers are the writers of open questions, and the connected ones
	// (writers.go).
	writers map[string]*writerState
	// nextCheck is the earliest time a question may leave the open set
	// for its expiry or its writer's leaving (dropDead): until then,
	// nothing has to be looked at.
	nextCheck time.Time
	// now is the clock expiry is judged by; tests set it.
	now func() time.Time
}

// settledOwner is who asked a settled question. Only the identity is
// kept, never the question itself.
type settledOwner struct {
	source, session string
}

func newOpenSet(now func() time.Time) *openSet {
	if now == nil {
		now = time.Now
	}
	return &openSet{byKey: map[string]*openQuestion{}, byID: map[string]*openQuestion{},
		order: list.New(), perSession: map[string]int{}, perSource: map[string]int{}, writers: map[string]*writerState{},
		settled: map[string]settledOwner{}, now: now}
}

// expiresAt reads the expires_at of an attention.requested's data; zero
// when it has none or it does not parse.
func expiresAt(data json.RawMessage) time.Time {
	var d struct {
		ExpiresAt string `json:"expires_at"`
	}
	if json.Unmarshal(data, &d) != nil || d.ExpiresAt == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, d.ExpiresAt)
	if err != nil {
		return time.Time{}
	}
	return t
}

func questionKey(source, id string) string { return source + "\x00" + id }

// has reports whether d is the attention.requested of a question still
// open, or the vote it keeps: what a snapshot already delivers.
func (o *openSet) has(d *Delivery) bool {
	switch d.Event.Type {
	case typeRequested:
		q, ok := o.byKey[questionKey(d.Event.Source, d.Event.ID)]
		return ok && q.d.Event.Session == d.Event.Session
	case TypeQuestionVote:
		q, ok := o.byKey[questionKey(d.Event.Source, d.Event.Subject)]
		return ok && q.vote == d
	}
	return false
}

// change is what an event did to the open set.
type change int

const (
	unchanged change = iota
	opened
	reannounced // an open question asked again with its original id
	settled
)

// apply updates the set for an event that writer put in the hub ("" for
// the process's own) and says what changed. A lifecycle event settles a
// question only when it comes from the question's owner: the same source
// and session as the attention.requested.
func (o *openSet) apply(d *Delivery, writer string) change {
	ev := &d.Event
	switch ev.Type {
	case typeRequested:
		if ev.Session == "" {
			return unchanged
		}
		key := questionKey(ev.Source, ev.ID)
		if _, dup := o.byKey[key]; dup {
			return reannounced
		}
		q := &openQuestion{d: d, key: key, sess: sessionKey(ev), writer: writer, size: deliverySize(d), expires: expiresAt(ev.Data)}
		q.elem = o.order.PushBack(q)
		o.byKey[key] = q
		if _, taken := o.byID[ev.ID]; !taken {
			o.byID[ev.ID] = q
		}
		o.perSession[q.sess]++
		o.perSource[ev.Source]++
		o.bytes += q.size
		o.count(q, 1)
		o.soon(o.deadline(q))
		return opened
	case TypeQuestionVote:
		q, ok := o.byKey[questionKey(ev.Source, ev.Subject)]
		if !ok || q.d.Event.Session != ev.Session {
			return unchanged // only the question's owner says who approved it
		}
		o.count(q, -1)
		o.bytes -= q.size
		q.vote = d
		q.size = deliverySize(q.d) + deliverySize(d)
		o.bytes += q.size
		o.count(q, 1)
		return unchanged
	case typeResolved, typeTimeout:
		q, ok := o.byKey[questionKey(ev.Source, ev.Subject)]
		if !ok || q.d.Event.Session != ev.Session {
			return unchanged
		}
		o.remove(q)
		return settled
	case typeEnded:
		// A session never ends with a question pending (AEP-0002 §7 rule
		// 2); what its owner left open cannot be answered any more.
		k := sessionKey(ev)
		if o.perSession[k] == 0 {
			return unchanged
		}
		for e := o.order.Front(); e != nil; {
			next := e.Next()
			if q := e.Value.(*openQuestion); q.sess == k {
				o.remove(q)
			}
			e = next
		}
		return settled
	}
	return unchanged
}

func (o *openSet) remove(q *openQuestion) {
	o.order.Remove(q.elem)
	delete(o.byKey, q.key)
	if o.byID[q.d.Event.ID] == q {
		delete(o.byID, q.d.Event.ID)
		o.rememberSettled(q.d.Event.ID, settledOwner{source: q.d.Event.Source, session: q.d.Event.Session})
	}
	if o.perSession[q.sess]--; o.perSession[q.sess] <= 0 {
		delete(o.perSession, q.sess)
	}
	if o.perSource[q.d.Event.Source]--; o.perSource[q.d.Event.Source] <= 0 {
		delete(o.perSource, q.d.Event.Source)
	}
	o.bytes -= q.size
	o.count(q, -1)
}

// questionOf returns the id of the question ev asks or changes the state
// of, or "" for any other event (attention.routed included: any consumer
// may say it routed a question, AEP-0002 §7 rule 3).
func questionOf(ev *aep.Event) string {
	switch {
	case ev.Type == typeRequested:
		return ev.ID
	case IsLifecycle(ev.Type):
		return ev.Subject
	}
	return ""
}

// ownerConflict returns why ev, which asks or changes question q, may not
// when owner asked q, or "": a question's lifecycle comes only from its
// owner (the same source and session), and a new question may not take the
// id of another owner's question (consumers address questions by id).
func ownerConflict(owner, ev *aep.Event) string {
	if owner == nil || (owner.Source == ev.Source && owner.Session == ev.Session) {
		return ""
	}
	if ev.Type == typeRequested {
		return "question id " + ev.ID + " is already used by another emitter's question; a question id names one question"
	}
	return "question " + ev.Subject + " belongs to another emitter; only the emitter that asked it may answer, resolve or time it out"
}

// owner returns the attention.requested of the open question id; for a
// recently settled one, an event naming only its owner (source and
// session); otherwise nil.
func (o *openSet) owner(id string) *aep.Event {
	if q, ok := o.byID[id]; ok {
		return &q.d.Event
	}
	if s, ok := o.settled[id]; ok {
		return &aep.Event{ID: id, Source: s.source, Session: s.session}
	}
	return nil
}

// rememberSettled records the owner of a question that left the open set,
// forgetting the oldest beyond keepSettled.
func (o *openSet) rememberSettled(id string, s settledOwner) {
	keep := o.keepSettled
	if keep <= 0 {
		keep = DefaultSettledOwners
	}
	if _, ok := o.settled[id]; !ok {
		o.settledOrder = append(o.settledOrder, id)
	}
	o.settled[id] = s
	for len(o.settledOrder) > keep {
		delete(o.settled, o.settledOrder[0])
		o.settledOrder = o.settledOrder[1:]
	}
}

// snapshot returns the open questions f selects, oldest first, each
// followed by the vote it keeps (when f selects it too), after dropping
// those nobody can answer any more (dropDead); questions is how many of
// them are questions.
func (o *openSet) snapshot(f Filter) (out []*Delivery, questions int) {
	o.dropDead()
	out = make([]*Delivery, 0, o.order.Len())
	for e := o.order.Front(); e != nil; e = e.Next() {
		q := e.Value.(*openQuestion)
		if f == nil || f(&q.d.Event) {
			out = append(out, q.d)
			questions++
			if q.vote != nil && (f == nil || f(&q.vote.Event)) {
				out = append(out, q.vote)
			}
		}
	}
	return out, questions
}

// DropOpen removes from the open set the open questions asked in session
// under a source for which drop reports true, and returns how many it
// removed. It is for questions that were never the session's owner's to
// settle: those another connection left in a session before the bridge
// that owns it joined the hub. Nothing is published, since nobody settled
// them: the history keeps them, and subscriptions start without them from
// then on. Their ids stay their askers' among the recently settled
// (DefaultSettledOwners). drop runs with the hub locked: it must not call
// the hub.
func (h *Hub) DropOpen(session string, drop func(source string) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open.dropSession(session, drop)
}

// dropSession removes the open questions of session whose source drop
// reports true for, and returns how many.
func (o *openSet) dropSession(session string, drop func(source string) bool) int {
	n := 0
	for e := o.order.Front(); e != nil; {
		next := e.Next()
		if q := e.Value.(*openQuestion); q.d.Event.Session == session && drop(q.d.Event.Source) {
			o.remove(q)
			n++
		}
		e = next
	}
	return n
}

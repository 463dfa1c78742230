package bus

import (
	"time"
)

// OrphanWait is how long the open questions of a writer that left stay
// open, waiting for it to come back (Hub.Left): a writer that does not
// come back in that time is gone, and its questions, which nobody else may
// settle and nobody can answer any more, leave the open set (the history
// keeps them). A question whose expires_at comes sooner leaves then.
const OrphanWait = 2 * time.Minute

// A writer is who puts questions in the hub from outside the process: an
// emitter's connection, named by whatever stays the same across its
// reconnects, or a source that POSTs. Each writer holds at most its share
// of the open-question bytes (HubOptions.OpenShare), so one that floods
// cannot take the budget from the others; and the questions of a writer
// that left without settling them leave the open set OrphanWait after it
// left (or at their expires_at), unless it is a writer that will come
// back for its dated questions (a joined bridge: Hub.Left's keepDated).
//
// writerState is one writer's part of the open set. It is guarded by the
// hub's mutex.
type writerState struct {
	open  int
	bytes int64
	// gone is when the writer left, zero while it is connected; keepDated
	// says its questions with an expires_at wait for it until then.
	gone      time.Time
	keepDated bool
}

// count adds (d 1) or removes (d -1) q from its writer's part.
func (o *openSet) count(q *openQuestion, d int) {
	if q.writer == "" {
		return
	}
	w := o.writers[q.writer]
	if w == nil {
		w = &writerState{}
		o.writers[q.writer] = w
	}
	w.open += d
	w.bytes += int64(d) * q.size
	if w.open <= 0 && !w.gone.IsZero() {
		delete(o.writers, q.writer)
	}
}

// writerBytes returns the bytes of writer's open questions.
func (o *openSet) writerBytes(writer string) int64 {
	if w := o.writers[writer]; w != nil {
		return w.bytes
	}
	return 0
}

// left records that writer left at now; keepDated keeps its questions
// that have an expires_at until then (plus ExpiredGrace).
func (o *openSet) left(writer string, keepDated bool) {
	w := o.writers[writer]
	if w == nil {
		return
	}
	if w.open == 0 {
		delete(o.writers, writer)
		return
	}
	if w.gone.IsZero() {
		w.gone = o.now()
	}
	w.keepDated = keepDated
	o.nextCheck = time.Time{} // its questions may leave sooner now
}

// back records that writer is connected.
func (o *openSet) back(writer string) {
	if w := o.writers[writer]; w != nil {
		w.gone = time.Time{}
		return
	}
	o.writers[writer] = &writerState{}
}

// deadline is when q leaves the open set, or zero when it waits for its
// owner: more than ExpiredGrace past its expires_at (an owner that is
// alive times it out at expires_at), or, its writer gone, OrphanWait after
// the writer left or at its expires_at, whichever is sooner (unless the
// writer keeps its dated questions).
func (o *openSet) deadline(q *openQuestion) time.Time {
	var at time.Time
	if !q.expires.IsZero() {
		at = q.expires.Add(ExpiredGrace + time.Nanosecond)
	}
	w := o.writers[q.writer]
	if q.writer == "" || w == nil || w.gone.IsZero() || (w.keepDated && !q.expires.IsZero()) {
		return at
	}
	orphan := w.gone.Add(OrphanWait)
	if !q.expires.IsZero() && q.expires.Before(orphan) {
		orphan = q.expires
	}
	if at.IsZero() || orphan.Before(at) {
		at = orphan
	}
	return at
}

// soon makes the next dropDead look at the open set by at, unless at is
// zero. A zero nextCheck already makes it look.
func (o *openSet) soon(at time.Time) {
	if !at.IsZero() && !o.nextCheck.IsZero() && at.Before(o.nextCheck) {
		o.nextCheck = at
	}
}

// never is a nextCheck that no question's deadline comes before.
var never = time.Unix(1<<62, 0)

// dropDead removes the questions whose deadline has come, and returns
// how many. Until the earliest deadline, it looks at nothing.
func (o *openSet) dropDead() int {
	now := o.now()
	if !o.nextCheck.IsZero() && now.Before(o.nextCheck) {
		return 0
	}
	n := 0
	o.nextCheck = never
	for e := o.order.Front(); e != nil; {
		next := e.Next()
		q := e.Value.(*openQuestion)
		switch at := o.deadline(q); {
		case at.IsZero():
		case !now.Before(at):
			o.remove(q)
			n++
		case at.Before(o.nextCheck):
			o.nextCheck = at
		}
		e = next
	}
	return n
}

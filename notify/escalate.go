package notify

import (
	"container/heap"
	"time"
)

// escalations are the open questions waiting to escalate, soonest first,
// with one timer for the soonest. It belongs to the reader goroutine.
type escalations struct {
	h     escHeap
	timer *time.Timer
	at    time.Time // when timer fires; zero when it is not set
}

// c is the channel that fires when the soonest escalation is due; nil
// (never fires) when none waits.
func (e *escalations) c() <-chan time.Time {
	if len(e.h) == 0 {
		e.stop()
		return nil
	}
	next := e.h[0].escAt
	if e.timer == nil || !e.at.Equal(next) {
		e.stop()
		e.timer, e.at = time.NewTimer(time.Until(next)), next
	}
	return e.timer.C
}

func (e *escalations) stop() {
	if e.timer != nil {
		e.timer.Stop()
		e.timer, e.at = nil, time.Time{}
	}
}

func (e *escalations) add(q *question) { heap.Push(&e.h, q) }

func (e *escalations) remove(q *question) {
	if q.index >= 0 {
		heap.Remove(&e.h, q.index)
	}
}

// due pops a question whose time has come by now, or returns nil.
func (e *escalations) due(now time.Time) *question {
	if len(e.h) == 0 || e.h[0].escAt.After(now) {
		return nil
	}
	e.stop() // the timer that fired is spent
	return heap.Pop(&e.h).(*question)
}

// escHeap orders questions by escAt (container/heap).
type escHeap []*question

func (h escHeap) Len() int           { return len(h) }
func (h escHeap) Less(i, j int) bool { return h[i].escAt.Before(h[j].escAt) }
func (h escHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *escHeap) Push(x any) {
	q := x.(*question)
	q.index = len(*h)
	*h = append(*h, q)
}
func (h *escHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	q.index = -1
	return q
}

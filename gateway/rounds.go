package gateway

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// roundTable is what a gateway knows of input_required rounds (see
// requeststate.go): the open ones its one-shot sessions handed out, by
// session, so a client's retry continues where its round began; and the
// used ones, until they expire, so a wrapper is good for one retry on
// this gateway. A retry of a round the table does not know (another
// gateway of the fleet minted it, or its session ended) is served by a
// new one-shot session, and the round is recorded as used. The table is
// guarded by Server.mu.
type roundTable struct {
	byID  map[roundID]*roundEntry
	order expiries // every entry's expiry, soonest first
}

// roundEntry is one round the table knows.
type roundEntry struct {
	sess    *session // the session that handed it out, while open there
	expires time.Time
	used    bool
}

// maxRounds bounds the rounds a gateway tracks: open ones, and used ones
// until they expire (--session-idle after they were handed out).
const maxRounds = 1 << 17

// errTooManyRounds refuses a retry the table has no room to record.
var errTooManyRounds = fmt.Errorf("the gateway tracks as many retried rounds as it can (%d used within --session-idle); retry later", maxRounds)

// sweep forgets the rounds that expired by now.
func (t *roundTable) sweep(now time.Time) {
	for len(t.order) > 0 && !now.Before(t.order[0].expires) {
		x := heap.Pop(&t.order).(expiry)
		if e := t.byID[x.id]; e != nil && !now.Before(e.expires) {
			delete(t.byID, x.id)
		}
	}
	if len(t.order) > 2*maxRounds { // forgotten entries left behind: rebuild
		t.order = t.order[:0]
		for id, e := range t.byID {
			t.order = append(t.order, expiry{e.expires, id})
		}
		heap.Init(&t.order)
	}
}

// add records a round; false when the table is full.
func (t *roundTable) add(id roundID, e *roundEntry, now time.Time) bool {
	if t.byID == nil {
		t.byID = map[roundID]*roundEntry{}
	}
	t.sweep(now)
	if len(t.byID) >= maxRounds {
		return false
	}
	t.byID[id] = e
	heap.Push(&t.order, expiry{e.expires, id})
	return true
}

// take marks the round of a retry used and returns the session that
// handed it out, if it is still open there; errReplayed for a round used
// already, errTooManyRounds when a round the table does not know cannot
// be recorded.
func (t *roundTable) take(id roundID, expires, now time.Time) (*session, error) {
	if e := t.byID[id]; e != nil {
		if e.used {
			return nil, errReplayed
		}
		sess := e.sess
		e.used, e.sess = true, nil
		return sess, nil
	}
	if !t.add(id, &roundEntry{expires: expires, used: true}, now) {
		return nil, errTooManyRounds
	}
	return nil, nil
}

// forget drops the rounds sess handed out and nobody retried: their
// retry, if it comes, is served like one another gateway minted.
func (t *roundTable) forget(id roundID, sess *session) {
	if e := t.byID[id]; e != nil && !e.used && e.sess == sess {
		delete(t.byID, id)
	}
}

// forgetSession drops the open rounds of a shared session that ended,
// which keeps no list of its own: it hands out rounds for as long as it
// lives.
func (t *roundTable) forgetSession(sess *session) {
	for id, e := range t.byID {
		if !e.used && e.sess == sess {
			delete(t.byID, id)
		}
	}
}

// expiry is an entry of the expiry heap.
type expiry struct {
	expires time.Time
	id      roundID
}

// expiries is a min-heap of expiries (container/heap).
type expiries []expiry

func (h expiries) Len() int           { return len(h) }
func (h expiries) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiries) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiries) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// wrapStateLocked gives the client of a one-shot session, in place of
// the server's requestState in an input_required result, a wrapper this
// gateway minted (requeststate.go), and opens the round for the retry.
// A result whose requestState cannot be told apart from a second one is
// answered with an error instead. s.mu is held.
func (s *session) wrapStateLocked(st *stream, m json.RawMessage, env *envelope) json.RawMessage {
	now := time.Now()
	expires := time.UnixMilli(now.Add(s.srv.opts.SessionIdle).UnixMilli())
	id := newRoundID()
	out, found, err := replaceMember(m, "result", "requestState", func(state json.RawMessage) (json.RawMessage, error) {
		w := s.srv.sealer.seal(sealedState{round: id, expires: expires, client: clientBinding(s.owner), request: st.request, state: state})
		return json.Marshal(w)
	})
	if err != nil {
		s.log.Warn("refusing the server's input_required result: its requestState is ambiguous", "err", err)
		return errorMessage(env.ID, mcp.INTERNAL_ERROR, "the server's input_required result was refused: "+err.Error())
	}
	if !found {
		return m
	}
	if s.kind != shared {
		s.rounds[id] = true
	}
	s.srv.mu.Lock()
	ok := s.srv.rounds.add(id, &roundEntry{sess: s, expires: expires}, now)
	s.srv.mu.Unlock()
	if !ok {
		// The retry will be served by a new session, as on another
		// gateway of the fleet.
		delete(s.rounds, id)
		s.log.Warn("the gateway tracks as many rounds as it can; a retry of this one will start a new session", "max_rounds", maxRounds)
	}
	return out
}

// retryOf reads the requestState of a stateless request. With none, it
// returns the body as it is. With a wrapper the checks pass, it returns
// the body carrying the server's own state and the session that handed
// the round out, if it is still there (nil: serve it with a new one).
// Otherwise it returns why the request is refused.
func (s *Server) retryOf(body []byte, env *envelope, who principal) ([]byte, *session, error) {
	now := time.Now()
	var sealed sealedState
	out, found, err := replaceMember(body, "params", "requestState", func(w json.RawMessage) (json.RawMessage, error) {
		var err error
		sealed, err = s.sealer.open(w, now, requestBinding(env.Method, env.subject()), who)
		return sealed.state, err
	})
	if err != nil || !found {
		return body, nil, err
	}
	s.mu.Lock()
	sess, err := s.rounds.take(sealed.round, sealed.expires, now)
	if sess != nil && s.sessions[sess.id] != sess {
		sess = nil
	}
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if sess != nil {
		sess.mu.Lock()
		delete(sess.rounds, sealed.round)
		ending := sess.ctx.Err() != nil
		sess.mu.Unlock()
		if ending {
			sess = nil // a new session serves the retry
		}
	}
	return out, sess, nil
}

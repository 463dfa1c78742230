package gateway

import (
	"fmt"
	"time"
)

// makeRoom ends the least recently used idle session of all to make room
// for a new one, and returns a channel closed once it is gone. A session
// is idle when it has started, has no request in flight, and no question
// open, neither at its client (a server request the client has not
// answered) nor at the operators. Sessions no connection carries go
// first: a client that left without DELETE (the inspector CLI, Mastra
// and LangChain do) holds no stream, while one with its GET stream open
// is still there. A session already ending is waited for instead. When
// every session is busy, makeRoom returns errFull.
func (s *Server) makeRoom(all []*session) (<-chan struct{}, error) {
	var best *session
	var bestLast time.Time
	bestConnected := true
	for _, sess := range all {
		st := sess.idleState()
		if st.ending {
			return sess.done, nil // its slot is about to be free
		}
		if !st.idle {
			continue
		}
		if best == nil || (bestConnected && !st.connected) || (bestConnected == st.connected && st.last.Before(bestLast)) {
			best, bestLast, bestConnected = sess, st.last, st.connected
		}
	}
	if best == nil {
		return nil, errFull
	}
	reason := fmt.Sprintf("ended to make room for a new session: the gateway serves %d (--max-sessions), and this one was the least recently used idle one", s.opts.MaxSessions)
	if !best.endIdle(reason) {
		// It got a request meanwhile: look again.
		done := make(chan struct{})
		close(done)
		return done, nil
	}
	best.log.Info("ending the least recently used idle MCP session to make room for a new one", "idle", time.Since(bestLast).Round(time.Second).String(), "max_sessions", s.opts.MaxSessions)
	return best.done, nil
}

// sessionState is what makeRoom reads of a session.
type sessionState struct {
	idle, ending, connected bool
	last                    time.Time // the last request, message or connection
}

// idleState reads the session's state for makeRoom.
func (sess *session) idleState() sessionState {
	sess.mu.Lock()
	b := sess.b
	st := sessionState{ending: sess.ctx.Err() != nil, last: sess.lastActive}
	// A session with no stream yet is still being set up by the handler
	// that opened it, its first message not yet registered.
	st.idle = b != nil && !st.ending && (len(sess.streams) > 0 || sess.used) && len(sess.byRequest) == 0 && len(sess.sentOn) == 0
	for _, stream := range sess.streams {
		if stream.attached {
			st.connected = true
			break
		}
	}
	sess.mu.Unlock()
	// The manager calls back into the session (WriteMessage) under its
	// own lock, so it is asked without sess.mu held.
	if st.idle && b.Manager().Len() > 0 {
		st.idle = false
	}
	return st
}

// endIdle ends the session with reason if it still has no request in
// flight and no question open at its client; it reports whether it did.
func (sess *session) endIdle(reason string) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ctx.Err() != nil || len(sess.byRequest) > 0 || len(sess.sentOn) > 0 {
		return false
	}
	if sess.reason == "" {
		sess.reason = reason
	}
	sess.cancel()
	return true
}

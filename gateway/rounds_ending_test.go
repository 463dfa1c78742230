package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRetryOfAnEndingSession: a retry whose round was handed out by a
// session that is ending (its context done, the session not yet
// forgotten: its server is still being stopped) is served by a new
// session, with the server's own state, and leaves the ending session
// as it found it: its lock free, so the session can finish ending.
func TestRetryOfAnEndingSession(t *testing.T) {
	t.Parallel()
	sealer, err := newStateSealer("")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{sealer: sealer, sessions: map[string]*session{}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the session is ending
	sess := &session{id: "ending", ctx: ctx, rounds: map[roundID]bool{}}
	s.sessions[sess.id] = sess
	now := time.Now()
	expires := time.UnixMilli(now.Add(time.Minute).UnixMilli())
	id := newRoundID()
	sess.rounds[id] = true
	s.rounds.add(id, &roundEntry{sess: sess, expires: expires}, now)
	who := principal("token:0123")
	w, _ := json.Marshal(sealer.seal(sealedState{round: id, expires: expires, client: clientBinding(who),
		request: requestBinding("tools/call", "ask"), state: json.RawMessage(`"the server's state"`)}))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","requestState":` + string(w) + `}}`
	env, _ := parse([]byte(body))

	out, got, err := s.retryOf([]byte(body), &env, who)
	if err != nil {
		t.Fatalf("the retry was refused: %v", err)
	}
	if got != nil {
		t.Errorf("the retry was given the ending session; want none, so a new one serves it")
	}
	if !strings.Contains(string(out), `"requestState":"the server's state"`) {
		t.Errorf("the retry's body is %s; want the server's own requestState in it", out)
	}
	if !sess.mu.TryLock() {
		t.Fatal("the ending session's lock is held after the retry: the session can never finish ending")
	}
	sess.mu.Unlock()
	if sess.rounds[id] {
		t.Errorf("the ending session still holds the retried round")
	}
}

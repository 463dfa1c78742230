package natsplane

import (
	"fmt"
	"sync"
	"testing"
)

// TestNotificationClaimedOnce: three front doors claim the same
// notifications at once; each is claimed by exactly one, and a door
// that claims one again (as a door that starts later does) is told
// another sent it. A plane with another prefix has claims of its own.
func TestNotificationClaimedOnce(t *testing.T) {
	prefix := newPrefix()
	ms := []*Member{member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix), member(t, shared.URLs(), prefix)}
	const keys = 16
	won := make([][]bool, keys)
	var wg sync.WaitGroup
	for k := range keys {
		won[k] = make([]bool, len(ms))
		for i, m := range ms {
			wg.Go(func() { won[k][i] = m.ClaimNotification(fmt.Sprintf("notify v1\x00question.opened\x00q%d", k)) })
		}
	}
	wg.Wait()
	for k, w := range won {
		n := 0
		for _, ok := range w {
			if ok {
				n++
			}
		}
		if n != 1 {
			t.Errorf("notification %d was claimed by %d doors (%v); want 1", k, n, w)
		}
	}
	late := member(t, shared.URLs(), prefix)
	if late.ClaimNotification("notify v1\x00question.opened\x00q0") {
		t.Error("a door that started later claimed a notification already sent")
	}
	if !member(t, shared.URLs(), newPrefix()).ClaimNotification("notify v1\x00question.opened\x00q0") {
		t.Error("another plane's claim kept this plane's door from its own")
	}
}

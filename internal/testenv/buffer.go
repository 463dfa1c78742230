package testenv

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer collects output written from several goroutines (a logger, a
// child's stderr copier) and lets a test wait for what it expects, waking
// on every write instead of polling.
type Buffer struct {
	// mu guards b and changed.
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed on the next write
}

// Write appends p and wakes every waiter.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Changed returns a channel closed by the next write.
func (b *Buffer) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

// WaitFor blocks until the output contains s; limit is a failure guard,
// not a synchronisation.
func (b *Buffer) WaitFor(t testing.TB, s string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		ch := b.Changed()
		if strings.Contains(b.String(), s) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the output never said %q; it holds:\n%s", s, b.String())
		}
	}
}

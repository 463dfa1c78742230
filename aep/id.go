package aep

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

var (
	// entropyMu guards entropy: ulid's monotonic reader is not safe for
	// concurrent use.
	entropyMu sync.Mutex
	entropy   = ulid.Monotonic(rand.Reader, 0)
)

// NewID returns a new event id: a ULID, time-sortable and monotonic within
// this process (AEP-0001 §5.1 #2 recommends ULIDs).
func NewID() string { return NewIDAt(time.Now()) }

// NewIDAt returns a new ULID for the timestamp t.
func NewIDAt(t time.Time) string {
	entropyMu.Lock()
	defer entropyMu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), entropy)
	if err != nil {
		// The monotonic entropy overflowed within one millisecond: start a
		// fresh random sequence rather than fail.
		entropy = ulid.Monotonic(rand.Reader, 0)
		id = ulid.MustNew(ulid.Timestamp(t), rand.Reader)
	}
	return id.String()
}

package upstream

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"
)

// Reconnection pacing: when the transport resumes a POST's response
// stream that ended before its response, or reopens the standing GET
// stream, it waits first (MCP basic/transports: "The client MUST respect
// the retry field, waiting the given number of milliseconds before
// attempting to reconnect"; WHATWG HTML, "Server-sent events": the
// reconnection time, and exponential backoff after a failed attempt):
//   - after a stream that opened, the reconnection time the server set
//     last with an SSE retry field, on any stream of the session (the
//     TypeScript SDK's client keeps it the same way), exactly: a server
//     that polls gets one reopening per interval it asked for;
//   - when the server set none, a backoff from reconnectInitial that
//     doubles with every stream after the first in a row that opened and
//     ended without a message, so a server that ends its streams at once,
//     saying nothing, is reopened ever more slowly (up to reconnectMax)
//     instead of hammered;
//   - after an attempt that got no stream (the request failed, or an
//     HTTP status other than 200), a backoff from the retry (or
//     reconnectInitial) that doubles with every such attempt after the
//     first in a row;
//   - a backoff wait is lengthened by up to half (jitter), never
//     shortened, so no wait is shorter than the interval it paces, and
//     bridges that lost a server together do not all return at once;
//   - no wait is shorter than reconnectFloor, whatever the retry says.
//
// The waits are on the session's context (or a request's): Close, or the
// client's cancellation of the request, ends them at once.

const (
	// reconnectInitial is the first backoff wait when the server set no
	// retry: the TypeScript and Go SDK clients' initial delay.
	reconnectInitial = time.Second
	// reconnectMax caps a backoff wait before jitter. A longer retry the
	// server set is honoured as it is.
	reconnectMax = 30 * time.Second
	// reconnectFloor is the shortest wait: a retry below it (retry: 0)
	// is taken as it, so a stream is reopened ten times a second at most.
	reconnectFloor = 100 * time.Millisecond
	// reconnectJitter is the most a backoff wait is lengthened by, as a
	// fraction of it.
	reconnectJitter = 0.5
	// maxResumeRefusals is how many attempts in a row to resume a
	// response stream may get no stream before its request fails.
	maxResumeRefusals = 5
)

// serverRetry is the reconnection time the server set last with an SSE
// retry field, on any stream of the session. It is safe for concurrent
// use.
type serverRetry struct {
	v atomic.Int64 // the time plus one; 0 when the server set none
}

func (s *serverRetry) set(d time.Duration) { s.v.Store(int64(d) + 1) }

func (s *serverRetry) get() (time.Duration, bool) {
	v := s.v.Load()
	return time.Duration(v - 1), v > 0
}

// outcome is how one attempt to open an event stream went.
type outcome int

const (
	// refused: no stream (the request failed, or the status was not 200).
	refused outcome = iota
	// idle: a stream opened and ended without delivering a message.
	idle
	// delivered: a stream opened and delivered at least one message.
	delivered
)

// pacer paces the attempts to open one event stream. It is used by one
// goroutine.
type pacer struct {
	// retry returns the reconnection time the server set last, and
	// whether it set one.
	retry func() (time.Duration, bool)
	// jitter returns a number in [0, 1); nil means rand.Float64.
	jitter func() float64
	// streak counts the attempts since the last one that went well; each
	// doubles the backoff.
	streak int
	// refusals counts the attempts in a row that got no stream.
	refusals int
}

// newPacer returns a pacer that follows the session's retry.
func (c *Conn) newPacer() *pacer { return &pacer{retry: c.retry.get} }

// record notes how an attempt went.
func (p *pacer) record(o outcome) {
	_, set := p.retry()
	switch {
	case o == refused:
		p.streak++
		p.refusals++
	case o == delivered || set:
		// A stream that opened went well when it delivered, or when the
		// server said when to come back: it is polling.
		p.streak, p.refusals = 0, 0
	default:
		// Opened and ended in silence, with no retry: back off.
		p.streak++
		p.refusals = 0
	}
}

// delay returns the wait before the next attempt.
func (p *pacer) delay() time.Duration {
	r, set := p.retry()
	if set {
		r = max(r, reconnectFloor)
		if p.streak == 0 {
			return r // exactly what the server asked for
		}
	} else {
		r = reconnectInitial
	}
	d := r
	for i := 1; i < p.streak && d < reconnectMax; i++ {
		d *= 2
	}
	d = min(d, max(reconnectMax, r))
	j := p.jitter
	if j == nil {
		j = rand.Float64
	}
	return d + time.Duration(float64(d)*reconnectJitter*j())
}

// sleep waits d, or until ctx ends, and returns ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// transientStatus reports whether an HTTP status to a GET is worth
// trying again after a wait: the server is busy or briefly broken (the
// statuses the Go SDK's client retries, and 408). Any other status is its
// answer.
func transientStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// permanent reports whether a failed GET is the server's final answer (an
// HTTP status that is not transient) rather than a failure that a later
// attempt may not meet.
func permanent(err error) bool {
	se, ok := errors.AsType[*HTTPStatusError](err)
	return ok && !transientStatus(se.Code)
}

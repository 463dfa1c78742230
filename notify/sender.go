package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Log keys.
const (
	keyTarget   = "notify_target"
	keyType     = "notify_type"
	keyQuestion = "question"
	keyStatus   = "status"
	keyAttempt  = "attempt"
	keyErr      = "err"
	keyDropped  = "dropped"
)

// note is one notification waiting to be sent: what happened to which
// question. Every target it is queued for renders it at its own ceiling.
// A note is never changed once queued.
type note struct {
	id     string
	typ    Type
	at     time.Time
	q      *question
	settle *aep.Event // the settling event; nil for Opened and Expiring
}

// sender is one target's bounded queue and the goroutine that delivers
// it, oldest first, one request at a time.
type sender struct {
	// Fixed at construction.
	t        Target
	nf       *Notifier
	log      *slog.Logger
	endpoint string // where bodies are posted: the URL, or ntfy's root
	topic    string // the ntfy topic
	secret   []byte
	routed   bool
	// scrub are the parts of the URL and the secret that must never
	// appear in a log line, even inside a transport's error.
	scrub []string

	// mu guards the ring and dropping.
	mu       sync.Mutex
	ring     []*note
	head, n  int
	dropping int // dropped since the queue last emptied, for one log line
	wake     chan struct{}

	sent, retried, failed, dropped atomic.Uint64
	// elsewhere counts the notifications another front door claimed.
	elsewhere atomic.Uint64
}

func newSender(nf *Notifier, t Target, routed bool) *sender {
	s := &sender{t: t, nf: nf, routed: routed, endpoint: t.URL, secret: []byte(t.Secret),
		ring: make([]*note, nf.opts.QueueLen), wake: make(chan struct{}, 1)}
	s.log = nf.log.With(keyTarget, t.Label())
	if t.Format == Ntfy {
		s.endpoint, s.topic, _ = ntfyEndpoint(t.URL) // checked by Target.check
	}
	s.scrub = append(s.scrub, t.URL, s.endpoint)
	if t.Secret != "" {
		s.scrub = append(s.scrub, t.Secret)
	}
	if u, err := url.Parse(t.URL); err == nil {
		if len(u.EscapedPath()) > 1 {
			s.scrub = append(s.scrub, u.EscapedPath(), u.Path)
		}
		if u.RawQuery != "" {
			s.scrub = append(s.scrub, u.RawQuery)
		}
	}
	return s
}

// enqueue queues nt without ever blocking. A full queue drops its oldest
// notification: the newest says the most about questions now, and a
// receiver far behind is served best by what is current. What is dropped
// is counted, and logged once per run of drops (then summed up when the
// queue empties).
func (s *sender) enqueue(nt *note) {
	s.mu.Lock()
	if s.n == len(s.ring) {
		old := s.ring[s.head]
		s.ring[s.head] = nil
		s.head = (s.head + 1) % len(s.ring)
		s.n--
		s.dropped.Add(1)
		if s.dropping == 0 {
			s.log.Warn("the notification queue is full (the receiver is slow or down); dropping the oldest notifications",
				keyDropped, old.typ, keyQuestion, old.q.id(), "queue", len(s.ring))
		}
		s.dropping++
	}
	s.ring[(s.head+s.n)%len(s.ring)] = nt
	s.n++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// queued returns how many notifications wait.
func (s *sender) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// next returns the oldest notification, waiting for one; nil once the
// notifier closes and the queue is empty, or it is stopped.
func (s *sender) next() *note {
	for {
		if s.nf.ctx.Err() != nil {
			return nil // stopped: run counts what is left
		}
		s.mu.Lock()
		if s.n > 0 {
			nt := s.ring[s.head]
			s.ring[s.head] = nil
			s.head = (s.head + 1) % len(s.ring)
			s.n--
			if s.n == 0 && s.dropping > 0 {
				s.log.Warn("notifications were dropped while the queue was full", keyDropped, s.dropping)
				s.dropping = 0
			}
			s.mu.Unlock()
			return nt
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.nf.closing:
			s.mu.Lock()
			empty := s.n == 0
			s.mu.Unlock()
			if empty {
				return nil
			}
		case <-s.nf.ctx.Done():
			return nil
		}
	}
}

// run is the sender's goroutine: it delivers until the notifier closes
// and the queue is empty, or the notifier is stopped; what is left then
// is counted as dropped and logged.
func (s *sender) run() {
	defer s.nf.wg.Done()
	for {
		nt := s.next()
		if nt == nil {
			break
		}
		s.deliver(nt)
	}
	s.mu.Lock()
	left := s.n
	for s.n > 0 {
		s.ring[s.head] = nil
		s.head = (s.head + 1) % len(s.ring)
		s.n--
	}
	s.mu.Unlock()
	if left > 0 {
		s.dropped.Add(uint64(left))
		s.log.Warn("the bridge stopped before these notifications were sent", keyDropped, left)
	}
}

// deliver sends one notification, retrying 5xx, 429 and network errors
// with jittered exponential backoff (Retry-After honoured) up to
// MaxAttempts; other answers are final.
func (s *sender) deliver(nt *note) {
	if s.nf.opts.onDone != nil {
		defer s.nf.opts.onDone()
	}
	if claim := s.nf.opts.Claim; claim != nil && !claim(claimKey(s, nt)) {
		s.elsewhere.Add(1)
		s.log.Debug("another front door sends this notification", keyType, nt.typ, keyQuestion, nt.q.id())
		return
	}
	body, err := s.nf.body(s, nt)
	if err != nil {
		s.failed.Add(1)
		s.log.Error("a notification could not be made; it is not sent", keyType, nt.typ, keyQuestion, nt.q.id(), keyErr, s.safe(err))
		return
	}
	o := &s.nf.opts
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := s.post(nt, body)
		if status >= 200 && status < 300 {
			s.sent.Add(1)
			return
		}
		if err != nil && s.nf.ctx.Err() != nil { // stopped mid-request: run counts it
			s.requeueFront(nt)
			return
		}
		what := "HTTP " + strconv.Itoa(status)
		if err != nil {
			what = s.safe(err)
		}
		retry := err != nil || status == http.StatusTooManyRequests || status >= 500
		switch {
		case !retry && status >= 300 && status < 400:
			s.giveUp(nt, what, attempt, "the receiver redirects, and redirects are not followed: point the target at the final URL")
			return
		case !retry:
			s.giveUp(nt, what, attempt, "the receiver refused it; it is not retried (check the URL, its token and the format)")
			return
		case attempt >= o.MaxAttempts:
			s.giveUp(nt, what, attempt, "no more attempts")
			return
		case retryAfter > o.MaxRetryAfter:
			s.giveUp(nt, what, attempt, fmt.Sprintf("the receiver asks to wait %s (Retry-After), longer than the %s the bridge waits", retryAfter, o.MaxRetryAfter))
			return
		}
		wait := retryAfter
		if wait <= 0 {
			wait = backoff(attempt, o.Backoff, o.MaxBackoff)
		}
		s.retried.Add(1)
		s.log.Debug("notification not delivered; retrying", keyType, nt.typ, keyQuestion, nt.q.id(), keyStatus, what,
			keyAttempt, attempt, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.nf.ctx.Done():
			t.Stop()
			s.requeueFront(nt)
			return
		}
	}
}

// requeueFront puts back a notification a stop cut short, so run counts
// it with the rest.
func (s *sender) requeueFront(nt *note) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == len(s.ring) {
		s.dropped.Add(1) // the queue refilled behind it; it is the oldest
		return
	}
	s.head = (s.head - 1 + len(s.ring)) % len(s.ring)
	s.ring[s.head] = nt
	s.n++
}

func (s *sender) giveUp(nt *note, what string, attempts int, why string) {
	s.failed.Add(1)
	s.log.Warn("notification not delivered: "+why, keyType, nt.typ, keyQuestion, nt.q.id(), keyStatus, what, keyAttempt, attempts)
}

// backoff is the wait before attempt+1: base·2^(attempt-1), at most max,
// with equal jitter (a random point in its upper half), so many bridges
// that failed together do not retry together.
func backoff(attempt int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + rand.N(half+1)
}

// post makes one attempt: the status (0 on a network error), the
// Retry-After the answer asks for, and the error.
func (s *sender) post(nt *note, body []byte) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(s.nf.ctx, s.nf.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "aep-mcp-bridge-notify/1")
	h.Set(DeliveryHeader, nt.id)
	h.Set(EventHeader, string(nt.typ))
	if len(s.secret) > 0 {
		h.Set(SignatureHeader, Sign(s.secret, time.Now(), body))
	}
	resp, err := s.nf.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	// Read a little of the answer so the connection can be reused; what
	// the receiver says is never logged (it may echo the request).
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), time.Now()), nil
}

// retryAfter reads a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3); 0 when absent, unreadable or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(365*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// safe is err as it may be logged: the transport's words without the
// request's URL, and none of the URL's path, query or the secret.
func (s *sender) safe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	for _, p := range s.scrub {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, "…")
		}
	}
	return msg
}

// TargetStats is what one target has done.
type TargetStats struct {
	// Target is the target's Label.
	Target string
	Format Format
	// Routed says a Router added the target.
	Routed bool
	// Queued wait now; Sent were accepted (2xx); Retried counts attempts
	// that failed and were tried again; Failed were given up (a final
	// answer, no more attempts, or a Retry-After too long); Dropped were
	// pushed out of a full queue or left when the bridge stopped;
	// Elsewhere were sent by another front door of the fleet (Options.Claim).
	Queued                                    int
	Sent, Retried, Failed, Dropped, Elsewhere uint64
}

func (s *sender) stats() TargetStats {
	return TargetStats{Target: s.t.Label(), Format: s.t.Format, Routed: s.routed, Queued: s.queued(),
		Sent: s.sent.Load(), Retried: s.retried.Load(), Failed: s.failed.Load(), Dropped: s.dropped.Load(),
		Elsewhere: s.elsewhere.Load()}
}

// claimKey names nt for s wherever it is made (Options.Claim): the same
// question's same notification to the same target has the same key on
// every front door, whatever the note's own id and time.
func claimKey(s *sender, nt *note) string {
	ev := &nt.q.req.Event
	return strings.Join([]string{"notify v1", string(nt.typ), ev.Source, ev.Session, ev.ID, targetKey(&s.t)}, "\x00")
}

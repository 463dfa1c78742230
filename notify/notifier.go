package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// Defaults of Options.
const (
	DefaultQueueLen      = 256
	DefaultTimeout       = 10 * time.Second
	DefaultMaxAttempts   = 8
	DefaultBackoff       = time.Second
	DefaultMaxBackoff    = 2 * time.Minute
	DefaultMaxRetryAfter = 10 * time.Minute
	DefaultMaxRouted     = 256
	// subscriptionQueue is the notifier's live queue in the hub. Its
	// reader only files events, so it keeps up with any publisher.
	subscriptionQueue = 4096
	// maxTracked bounds the open questions and sessions the notifier
	// keeps (the hub bounds them long before).
	maxTracked = 1 << 17
)

// Options configure a Notifier. Zero values mean the documented defaults.
type Options struct {
	// Hub is the bus the notifier follows. Required.
	Hub *bus.Hub
	// Targets are the configured webhooks.
	Targets []Target
	// PublicURL is the inbox's address for links to a question (checked
	// by CheckPublicURL); "" means no links.
	PublicURL string
	// Escalate, when positive, sends Expiring that long before a
	// question's expires_at if it is still open then (to the targets that
	// want it, and to their EscalateTo). A question that opens with less
	// time left than Escalate is not escalated.
	Escalate time.Duration
	// Router adds targets per question; nil adds none.
	Router Router
	// Redact configures the AEP-0003 §9.4 pipeline every string goes
	// through before it leaves, at any ceiling (PII is kept at full).
	Redact aep.RedactOptions
	// Token is the bridge's bearer token, redacted from everything sent
	// should any text carry it.
	Token string
	// QueueLen bounds each target's queue; 0 means DefaultQueueLen.
	QueueLen int
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one notification; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// Backoff and MaxBackoff shape the waits between attempts: Backoff
	// doubling up to MaxBackoff, jittered; 0 means DefaultBackoff and
	// DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After honoured; a receiver that
	// asks for longer is given up on for that notification. 0 means
	// DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// MaxRouted bounds the targets a Router may add over the notifier's
	// life; 0 means DefaultMaxRouted.
	MaxRouted int
	// Claim, when set, is asked before each notification is sent, with
	// a key that names the notification wherever it is made: what
	// happened (its Type), to which question (its source, session and
	// id), for which target (its name, format and URL). The notification
	// is sent only when Claim returns true. The front doors of a fleet
	// share one claim per key (natsplane.Member.ClaimNotification), so a
	// question notifies each target once, not once per door. It is
	// called from the target's sender goroutine and must be bounded; nil
	// sends everything.
	Claim func(key string) bool
	// Transport makes the requests; nil means a clone of
	// http.DefaultTransport (proxies from the environment). Redirects are
	// never followed, whatever the transport.
	Transport http.RoundTripper
	// Logger receives logs; nil discards them.
	Logger *slog.Logger

	// onFiled and onDone let tests wait for the reader to file an event
	// and for a sender to finish with a notification (sent or given up).
	onFiled func(*bus.Delivery)
	onDone  func()
}

// Router picks further targets for a question beyond the configured ones:
// with named operators, a rule may send a question to the people who can
// answer it (a policy's approvers), each at their own URL. Route is called
// once per question, when it opens, on the notifier's one reader
// goroutine: it must return at once (look up, never call out). The
// targets it returns are checked as configured ones are (one that fails
// is logged and skipped), keyed by Name, URL and format so that one
// person's target is one queue, and sent the question's notifications
// (those their Events want) and its escalation.
type Router interface {
	Route(q Question) []Target
}

// RouterFunc adapts a function to Router.
type RouterFunc func(Question) []Target

// Route calls f.
func (f RouterFunc) Route(q Question) []Target { return f(q) }

// Notifier follows a hub and notifies targets of its questions. New
// starts it; Close stops it.
//
// A Notifier is safe for concurrent use.
type Notifier struct {
	// Fixed at construction.
	opts    Options
	log     *slog.Logger
	client  *http.Client
	red     *aep.Redactor // PII redacted
	redFull *aep.Redactor // for full targets: credentials only
	filter  bus.Filter

	ctx     context.Context // ends every request and wait: a hard stop
	stop    context.CancelFunc
	closing chan struct{} // closed by Close: senders flush, then end
	quit    chan struct{} // closed by Close: the reader drains, then ends
	read    chan struct{} // closed when the reader has ended
	wg      sync.WaitGroup
	once    sync.Once

	// mu guards senders and byKey (the reader adds routed ones).
	mu      sync.Mutex
	senders []*sender
	byKey   map[string]*sender
	byName  map[string]*sender

	// Owned by the reader goroutine.
	sub      *bus.Subscription
	open     map[string]*question
	clients  map[string]string // session key -> "name version"
	timers   escalations
	routed   int
	untraced int
}

// New checks o and starts a notifier on o.Hub: one reader goroutine and
// one sender goroutine per target.
func New(o Options) (*Notifier, error) {
	if o.Hub == nil {
		return nil, errors.New("notify: Options.Hub is required")
	}
	targets := append([]Target(nil), o.Targets...)
	if err := checkTargets(targets); err != nil {
		return nil, err
	}
	o.Targets = targets
	if o.PublicURL != "" {
		base, err := CheckPublicURL(o.PublicURL)
		if err != nil {
			return nil, err
		}
		o.PublicURL = base
	}
	if o.Escalate < 0 {
		return nil, errors.New("--notify-escalate must be 0 (off) or positive")
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Timeout, DefaultTimeout)
	def(&o.Backoff, DefaultBackoff)
	def(&o.MaxBackoff, DefaultMaxBackoff)
	def(&o.MaxRetryAfter, DefaultMaxRetryAfter)
	if o.QueueLen <= 0 {
		o.QueueLen = DefaultQueueLen
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxRouted <= 0 {
		o.MaxRouted = DefaultMaxRouted
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	n := &Notifier{opts: o, log: o.Logger, closing: make(chan struct{}), quit: make(chan struct{}), read: make(chan struct{}),
		byKey: map[string]*sender{}, byName: map[string]*sender{}, open: map[string]*question{}, clients: map[string]string{}}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	n.client = &http.Client{Transport: o.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	red := o.Redact
	if o.Token != "" {
		red.Secrets = append(append([]string(nil), red.Secrets...), o.Token)
	}
	n.red = aep.NewRedactor(red)
	red.DisablePII = true
	n.redFull = aep.NewRedactor(red)
	n.filter = func(ev *aep.Event) bool {
		switch ev.Type {
		case "attention.requested", "attention.answered", "attention.resolved", "attention.timeout", "attention.dismissed",
			"session.started", "session.ended":
			return true
		}
		return false
	}
	n.ctx, n.stop = context.WithCancel(context.Background())
	for _, t := range o.Targets {
		n.addSender(t, false)
	}
	n.sub, _ = o.Hub.SubscribeFrom(n.filter, bus.From{}, subscriptionQueue)
	go n.reader()
	return n, nil
}

// targetKey is what makes two targets one queue.
func targetKey(t *Target) string { return t.Name + "\x00" + string(t.Format) + "\x00" + t.URL }

// addSender starts a sender for a checked target.
func (n *Notifier) addSender(t Target, routed bool) *sender {
	s := newSender(n, t, routed)
	n.mu.Lock()
	n.senders = append(n.senders, s)
	n.byKey[targetKey(&t)] = s
	if t.Name != "" && !routed {
		n.byName[t.Name] = s
	}
	n.mu.Unlock()
	n.wg.Add(1)
	go s.run()
	return s
}

// Close stops following the hub, files what it already published, and
// lets every target send what is queued until ctx ends; then it stops
// them, counting what is left as dropped. It returns ctx's error if ctx
// cut the flush short.
func (n *Notifier) Close(ctx context.Context) error {
	var err error
	n.once.Do(func() {
		close(n.quit)
		<-n.read
		close(n.closing)
		done := make(chan struct{})
		go func() { n.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("notifications still queued when the bridge stopped: %w", ctx.Err())
			n.stop()
			<-done
		}
		n.stop()
	})
	return err
}

// Stats returns each target's counts, configured targets first.
func (n *Notifier) Stats() []TargetStats {
	n.mu.Lock()
	ss := append([]*sender(nil), n.senders...)
	n.mu.Unlock()
	out := make([]TargetStats, len(ss))
	for i, s := range ss {
		out[i] = s.stats()
	}
	return out
}

// Health sums Stats for /healthz: how many targets, and their counts. It
// names no target, since /healthz needs no token.
func (n *Notifier) Health() map[string]any {
	var queued int
	var sent, retried, failed, dropped uint64
	st := n.Stats()
	for _, s := range st {
		queued += s.Queued
		sent += s.Sent
		retried += s.Retried
		failed += s.Failed
		dropped += s.Dropped
	}
	return map[string]any{"targets": len(st), "queued": queued, "sent": sent, "retried": retried, "failed": failed, "dropped": dropped}
}

// body renders nt for s.
func (n *Notifier) body(s *sender, nt *note) ([]byte, error) {
	red := n.red
	if s.t.Capture >= aep.CaptureFull {
		red = n.redFull
	}
	q, err := questionOf(nt.q.req.Event, s.t.Capture, red, nt.q.client)
	if err != nil {
		return nil, err
	}
	q.Link = Link(n.opts.PublicURL, q.ID)
	v := Notification{ID: nt.id, Type: nt.typ, Time: nt.at, Question: q}
	if nt.settle != nil || nt.typ == TimedOut || nt.typ == Dismissed {
		var ev aep.Event
		if nt.settle != nil {
			ev = *nt.settle
		}
		v.Outcome = outcomeOf(ev, nt.typ, s.t.Capture, red)
	}
	return render(s.t.Format, &v, s.topic)
}

// question is an open question as the reader tracks it.
type question struct {
	req     *bus.Delivery
	client  string
	targets []*sender
	// escAt is when it escalates; zero when it does not. index is its
	// place in the escalation heap, -1 when not in it.
	escAt time.Time
	index int
}

func (q *question) id() string { return q.req.Event.ID }

// sessionKey names a session by its owner.
func sessionKey(source, session string) string { return source + "\x00" + session }

// reader is the notifier's goroutine that follows the hub. It only files
// events into queues, so the hub never finds it slow; if it ever is, the
// hub closes its subscription and it subscribes again.
func (n *Notifier) reader() {
	defer close(n.read)
	for d := range n.sub.Backlog() {
		n.handle(d)
	}
	for {
		select {
		case d, ok := <-n.sub.C:
			if !ok {
				if n.sub.Err() == nil { // the hub closed
					return
				}
				n.resubscribe()
				continue
			}
			n.handle(d)
		case <-n.timers.c():
			n.escalateDue(time.Now())
		case <-n.quit:
			n.drain()
			return
		}
	}
}

// drain files what the hub already handed over, then unsubscribes.
func (n *Notifier) drain() {
	for {
		select {
		case d, ok := <-n.sub.C:
			if !ok {
				return
			}
			n.handle(d)
		default:
			n.sub.Close()
			n.timers.stop()
			return
		}
	}
}

// resubscribe follows the hub again after it dropped a slow subscription:
// the open questions come back as the backlog; those settled meanwhile are
// forgotten, with a log line, since their outcome is not known.
func (n *Notifier) resubscribe() {
	n.log.Warn("the notifier fell behind the bus and follows it again; questions settled meanwhile are not notified", keyErr, n.sub.Err())
	n.sub, _ = n.opts.Hub.SubscribeFrom(n.filter, bus.From{}, subscriptionQueue)
	still := map[string]bool{}
	for d := range n.sub.Backlog() {
		still[d.Event.ID] = true
		n.handle(d)
	}
	for id, q := range n.open {
		if !still[id] {
			n.forget(q)
		}
	}
}

// handle files one event.
func (n *Notifier) handle(d *bus.Delivery) {
	if n.opts.onFiled != nil {
		defer n.opts.onFiled(d)
	}
	ev := &d.Event
	switch ev.Type {
	case "session.started":
		var data struct {
			Client struct{ Name, Version string } `json:"client"`
		}
		if json.Unmarshal(ev.Data, &data) == nil && data.Client.Name != "" && len(n.clients) < maxTracked {
			c := data.Client.Name
			if data.Client.Version != "" {
				c += " " + data.Client.Version
			}
			n.clients[sessionKey(ev.Source, ev.Session)] = c
		}
	case "session.ended":
		delete(n.clients, sessionKey(ev.Source, ev.Session))
	case "attention.requested":
		n.opened(d)
	default:
		n.settled(ev)
	}
}

// opened starts tracking a question and queues Opened.
func (n *Notifier) opened(d *bus.Delivery) {
	ev := &d.Event
	if _, known := n.open[ev.ID]; known {
		return
	}
	if len(n.open) >= maxTracked {
		n.untraced++
		if n.untraced == 1 {
			n.log.Warn("too many open questions to notify of; new ones are not notified until some are settled", "open", len(n.open))
		}
		return
	}
	q := &question{req: d, client: n.clients[sessionKey(ev.Source, ev.Session)], index: -1}
	n.mu.Lock()
	q.targets = append(q.targets, n.senders[:len(n.opts.Targets)]...)
	n.mu.Unlock()
	q.targets = append(q.targets, n.route(q)...)
	n.open[ev.ID] = q
	now := time.Now()
	n.queue(q, Opened, nil, now)
	if n.opts.Escalate > 0 {
		var data struct {
			ExpiresAt string `json:"expires_at"`
		}
		if json.Unmarshal(ev.Data, &data) == nil {
			if exp, err := time.Parse(time.RFC3339Nano, data.ExpiresAt); err == nil && exp.Sub(now) > n.opts.Escalate {
				q.escAt = exp.Add(-n.opts.Escalate)
				n.timers.add(q)
			}
		}
	}
}

// route asks the Router for a question's further targets.
func (n *Notifier) route(q *question) []*sender {
	if n.opts.Router == nil {
		return nil
	}
	meta, err := questionOf(q.req.Event, aep.CaptureMetadata, n.red, q.client)
	if err != nil {
		return nil
	}
	var out []*sender
	for _, t := range n.opts.Router.Route(meta) {
		if err := t.check(); err != nil {
			n.log.Warn("a routed notification target is refused", keyQuestion, q.id(), keyErr, err)
			continue
		}
		n.mu.Lock()
		s := n.byKey[targetKey(&t)]
		n.mu.Unlock()
		if s == nil {
			if n.routed >= n.opts.MaxRouted {
				n.log.Warn("too many routed notification targets; this one is not added", keyTarget, t.Label(), "max", n.opts.MaxRouted)
				continue
			}
			n.routed++
			s = n.addSender(t, true)
		}
		out = append(out, s)
	}
	return out
}

// settled queues what a lifecycle event says of an open question, and
// forgets the question once it is settled.
func (n *Notifier) settled(ev *aep.Event) {
	q := n.open[ev.Subject]
	if q == nil || ev.Source != q.req.Event.Source || ev.Session != q.req.Event.Session {
		return // not a question we notified of, or not its owner's word
	}
	var typ Type
	switch ev.Type {
	case "attention.answered":
		var data struct {
			Answer struct{ Option string } `json:"answer"`
		}
		json.Unmarshal(ev.Data, &data)
		switch data.Answer.Option {
		case "decline":
			typ = Declined
		case "cancel":
			typ = Cancelled
		default:
			typ = Answered
		}
	case "attention.resolved":
		var data aep.AttentionResolved
		json.Unmarshal(ev.Data, &data)
		typ = Answered
		if data.Resolution == aep.ResolutionDismissed {
			typ = Dismissed
		}
	case "attention.timeout":
		typ = TimedOut
	case "attention.dismissed":
		typ = Dismissed
	default:
		return
	}
	n.queue(q, typ, ev, time.Now())
	n.forget(q)
}

// forget stops tracking q.
func (n *Notifier) forget(q *question) {
	delete(n.open, q.id())
	n.timers.remove(q)
}

// queue files a notification of q for every target that wants it.
func (n *Notifier) queue(q *question, typ Type, settle *aep.Event, at time.Time) {
	nt := &note{id: aep.NewIDAt(at), typ: typ, at: at, q: q, settle: settle}
	for _, s := range q.targets {
		if s.t.Wants(typ) {
			s.enqueue(nt)
		}
	}
}

// escalateDue queues Expiring for every question due by now: to its
// targets that want it and to their EscalateTo, each once.
func (n *Notifier) escalateDue(now time.Time) {
	for q := n.timers.due(now); q != nil; q = n.timers.due(now) {
		nt := &note{id: aep.NewIDAt(now), typ: Expiring, at: now, q: q}
		sent := map[*sender]bool{}
		for _, s := range q.targets {
			if s.t.Wants(Expiring) && !sent[s] {
				sent[s] = true
				s.enqueue(nt)
			}
			for _, name := range s.t.EscalateTo {
				n.mu.Lock()
				to := n.byName[name]
				n.mu.Unlock()
				if to != nil && !sent[to] {
					sent[to] = true
					to.enqueue(nt)
				}
			}
		}
	}
}

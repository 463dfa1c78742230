package natsplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// settledKept bounds the settled questions and ended sessions a member
// remembers, so that a stale statement of one (a bucket entry read after
// the settle, a replayed capture) does not open it again.
const settledKept = 64 << 10

// recent is a bounded set, oldest forgotten first. The member's ingest
// lock guards it.
type recent struct {
	max   int
	set   map[string]bool
	order []string
}

func newRecent(n int) *recent { return &recent{max: n, set: map[string]bool{}} }

func (r *recent) add(k string) {
	if r.set[k] {
		return
	}
	r.set[k] = true
	r.order = append(r.order, k)
	if len(r.order) > r.max {
		delete(r.set, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *recent) has(k string) bool { return r.set[k] }

// start catches up with the plane and keeps up with it: the members'
// heartbeats first (who is alive decides what the abandoned rule does
// with what follows), then the claimed sessions, the events stream and
// the open questions; then the pump, the heartbeat and the command and
// redelivery subscriptions. It returns once every part has caught up.
func (m *Member) start(ctx context.Context) error {
	m.wg.Add(1)
	go m.pump()
	m.state(false)
	steps := []struct {
		what  string
		start func() *follower
	}{
		// Who may act comes first: a front door serves nobody named
		// before it knows the named operators and clients.
		{"the named operators and clients", m.followIdentities},
		{"the members' heartbeats", func() *follower { return m.followBucket("the members' heartbeats", m.n.members, m.takePresence) }},
		{"the claimed sessions", func() *follower { return m.followBucket("the claimed sessions", m.n.sessions, m.takeBinding) }},
		{"the events stream", func() *follower {
			return m.follow("the events stream", m.n.events, m.n.eventSubjects, false, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) {
				if isRelayed(msg.Data()) {
					m.takeRelayed(msg.Subject(), msg.Data(), meta.Timestamp)
				} else {
					m.takeEvent(msg.Subject(), msg.Data(), meta.Timestamp)
				}
				m.ingest.Lock()
				m.passedLocked(meta.Sequence.Stream)
				m.ingest.Unlock()
			})
		}},
		{"the open questions", func() *follower { return m.followBucket("the open questions", m.n.open, m.takeOpen) }},
	}
	for _, s := range steps {
		select {
		case <-s.start().ready:
		case <-ctx.Done():
			return fmt.Errorf("catching up with %s of the operator plane: %w", s.what, ctx.Err())
		}
	}
	// A question whose event the stream no longer holds waits for no
	// event: it opens now.
	var last uint64
	err := m.retry(ctx, "reading the events stream's state", func(ctx context.Context) error {
		s, err := m.js.Stream(ctx, m.n.events)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err == nil {
			last = info.State.LastSeq
		}
		return err
	})
	if err != nil {
		return err
	}
	m.ingest.Lock()
	m.releaseLocked(last+1, time.Time{})
	m.ingest.Unlock()
	if m.cmdSb, err = m.nc.Subscribe(m.n.commandSubject(m.fp), m.takeCommand); err != nil {
		return err
	}
	if m.rdSb, err = m.nc.Subscribe(m.n.redeliverSubject("*"), m.takeRedelivery); err != nil {
		return err
	}
	if err := m.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("subscribing to commands: %w", err)
	}
	m.wg.Add(2)
	go m.beat()
	go m.recordSeen()
	return nil
}

// fresh reports whether a statement signed at signed was stored at
// stored, give or take MaxSkew: a statement replayed long after it was
// made is not.
func (m *Member) fresh(signed, stored time.Time) bool {
	d := stored.Sub(signed)
	return d <= m.opts.MaxSkew && d >= -m.opts.MaxSkew
}

// openEvent opens an event's envelope b: it reads the event, then checks
// that the envelope is signed for the event's session by the key the
// session is certified to. A command recorded in a session carries its
// sender's source, so only its session is checked.
func (m *Member) openEvent(b []byte) (envelope, *aep.Event, string, error) {
	if len(b) < envelopeHead {
		return envelope{}, nil, "", errEnvelope
	}
	ev, err := aep.Parse(b[envelopeHead:])
	if err != nil {
		return envelope{}, nil, "", fmt.Errorf("%w: the event does not parse", errEnvelope)
	}
	if ev.Session == "" {
		return envelope{}, nil, "", fmt.Errorf("%w: an event without a session", errEnvelope)
	}
	tok := token(ev.Source, ev.Session)
	env, err := open(b, kindEvent, m.n.prefix, tok)
	if err != nil {
		return envelope{}, nil, "", err
	}
	switch {
	case proof.SessionKey(ev.Session) != env.fp:
		return envelope{}, nil, "", fmt.Errorf("%w: session %q is not certified to the signing key", errEnvelope, ev.Session)
	case !aep.IsCommand(ev.Type) && proof.SourceKey(ev.Source) != env.fp:
		return envelope{}, nil, "", fmt.Errorf("%w: source %q does not name a session of the signing key", errEnvelope, ev.Source)
	}
	return env, ev, tok, nil
}

// takeEvent puts an event from the stream in the hub, when it is signed
// by its session's key, is stored under its session's subject, and, for
// a question, was stored when it was signed and was not settled since.
func (m *Member) takeEvent(subject string, data []byte, stored time.Time) {
	env, ev, tok, err := m.openEvent(data)
	if err != nil || subject != m.n.eventSubject(tok) {
		m.log.Debug("ignored a statement on the events stream that is not its session's", "subject", subject, "err", err)
		return
	}
	if env.fp == m.fp {
		return // this process's own: in the hub since it was written
	}
	m.ingest.Lock()
	defer m.ingest.Unlock()
	if ev.Type == "attention.requested" && !m.admitQuestion(env, ev, tok, stored) {
		return
	}
	m.put(env.fp, ev, data[envelopeHead:])
	m.settledLocked(ev, tok)
}

// settledLocked remembers what ev, an event of the session tok that the
// hub took, settles: a question, or the session. Callers hold m.ingest.
func (m *Member) settledLocked(ev *aep.Event, tok string) {
	switch ev.Type {
	case "attention.resolved", "attention.timeout":
		m.settled.add(ev.Subject)
	case "session.ended":
		m.ended.add(tok)
		delete(m.remote, tok)
		m.relayedFrom.drop(ev.Session)
	}
}

// admitQuestion reports whether a question stated by env may open: it
// was stored when it was signed, and neither it nor its session was
// settled since. Callers hold m.ingest.
func (m *Member) admitQuestion(env envelope, ev *aep.Event, tok string, stored time.Time) bool {
	switch {
	case !m.fresh(env.signedAt, stored):
		m.log.Warn("refused an open question stored long after it was signed (a replayed capture?)", "id", ev.ID, "session", ev.Session)
		return false
	case m.settled.has(ev.ID), m.ended.has(tok):
		return false
	}
	return true
}

// writerOf names a member to the hub's open questions, as the endpoint
// names a bridge joined with its key (authority.Table.Writer).
func writerOf(fp string) string { return "key " + fp }

// put hands a member's event to the hub as that member's writing, and
// keeps its questions under the abandoned rule while the member is gone.
// Callers hold m.ingest.
func (m *Member) put(fp string, ev *aep.Event, raw []byte) {
	w := writerOf(fp)
	err := m.hub.IngestFrom(w, []*aep.Event{ev}, [][]byte{raw})
	if m.peerLocked(fp).gone {
		m.hub.Left(w, true)
	}
	var ie *bus.IngestError
	if errors.As(err, &ie) {
		m.refusals++
		m.log.Warn("the front door's hub refused an event of another member", "type", ev.Type, "id", ev.ID, "code", ie.Code,
			"detail", ie.Detail, "refused_total", m.refusals)
	}
}

// takeOpen keeps the open questions' bucket: a question stated there
// that the hub does not hold opens (a front door that started after the
// stream dropped it still lists it). Nothing is removed for a deleted
// entry: a question is settled only by its owner's signed event. A
// deleted entry of this member's own open question is stated again.
func (m *Member) takeOpen(e entry) {
	fp, id, ok := strings.Cut(e.key, ".")
	if !ok {
		return
	}
	if e.op != jetstream.KeyValuePut {
		if fp == m.fp {
			m.restate(id)
		}
		return
	}
	if fp == m.fp {
		return
	}
	outer, err := open(e.value, kindOpen, m.n.prefix, e.key)
	if err != nil || outer.fp != fp {
		m.log.Debug("ignored an open-question entry not signed by its key", "key", e.key, "err", err)
		return
	}
	seq, inner, err := parseOpenBody(outer.body)
	if err != nil {
		m.log.Debug("ignored an open-question entry without its sequence", "key", e.key)
		return
	}
	env, ev, tok, err := m.openEvent(inner)
	if err != nil || env.fp != fp || ev.ID != id || ev.Type != "attention.requested" {
		m.log.Debug("ignored an open-question entry whose question is not its own", "key", e.key, "err", err)
		return
	}
	q := parkedQ{seq: seq, since: m.opts.now(), fp: fp, outer: outer, ev: ev, tok: tok, raw: inner[envelopeHead:], stored: e.created}
	m.ingest.Lock()
	defer m.ingest.Unlock()
	if seq >= m.evNext && len(m.parked) < parkedMax {
		m.parked = append(m.parked, q)
		return
	}
	m.openLocked(q)
}

// parkedQ is an open question read from its bucket before the events
// stream brought its event: it waits, so that every door lists a
// session's events in their order (the bucket is read apart from the
// stream, and may be ahead of it).
type parkedQ struct {
	seq    uint64    // where the stream stored its event
	since  time.Time // when it was parked (this member's clock)
	fp     string
	outer  envelope
	ev     *aep.Event
	tok    string
	raw    []byte
	stored time.Time
}

// Bounds of the questions waiting for their events: how many, and for
// how long (an events stream made again restarts its sequences).
const (
	parkedMax = 4096
	parkWait  = 2 * lastAttemptWait
)

// passedLocked records that the events stream brought this member past
// seq, and opens the questions that waited for it. Callers hold
// m.ingest.
func (m *Member) passedLocked(seq uint64) {
	m.evNext = max(m.evNext, seq+1)
	m.releaseLocked(m.evNext, time.Time{})
}

// releaseLocked opens the waiting questions whose events are before
// next, or that wait since before before. Callers hold m.ingest.
func (m *Member) releaseLocked(next uint64, before time.Time) {
	kept := m.parked[:0]
	for _, q := range m.parked {
		if q.seq < next || q.since.Before(before) {
			m.openLocked(q)
		} else {
			kept = append(kept, q)
		}
	}
	clear(m.parked[len(kept):])
	m.parked = kept
}

// openLocked opens a question read from its bucket, unless it was
// settled since or is stale; one the hub holds already is not announced
// again. Callers hold m.ingest.
func (m *Member) openLocked(q parkedQ) {
	if m.admitQuestion(q.outer, q.ev, q.tok, q.stored) {
		m.put(q.fp, q.ev, q.raw)
	}
}

// restate states this member's open question id again when its entry
// was deleted while it is still open.
func (m *Member) restate(id string) {
	m.mu.Lock()
	q, ok := m.mine[id]
	closed := m.closed
	m.mu.Unlock()
	if ok && !closed {
		m.log.Warn("an open question's entry was deleted from the plane while it is open; stating it again", "id", id)
		m.enqueue(item{op: opOpen, tok: q.tok, id: id, raw: q.raw, keep: true})
	}
}

// takeRedelivery re-sends a member's ack to the hub's subscribers, live.
func (m *Member) takeRedelivery(msg *natsMsg) {
	env, ev, tok, err := m.openEvent(msg.Data)
	if err != nil || msg.Subject != m.n.redeliverSubject(tok) || env.fp == m.fp {
		return
	}
	m.hub.Redeliver(*ev, msg.Data[envelopeHead:])
}

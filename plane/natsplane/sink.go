package natsplane

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// sink is the Member as its sessions' emitters see it.
type sink Member

// Write puts an event of this process's sessions in the member's hub at
// once, and queues it for the plane, in order, with what it does to the
// open questions' bucket. It never blocks on the cluster.
func (s *sink) Write(ev aep.Event, raw []byte) error {
	m := (*Member)(s)
	m.hub.Write(ev, raw)
	if ev.Session == "" {
		return nil // only sessions' events are on the plane
	}
	tok := token(ev.Source, ev.Session)
	m.mu.Lock()
	items := []item{{op: opEvent, tok: tok, id: ev.ID, raw: raw, keep: bus.MustDeliver(&ev)}}
	switch ev.Type {
	case "attention.requested":
		m.mine[ev.ID] = mineQ{tok: tok, session: ev.Session, raw: raw}
		items = append(items, item{op: opOpen, tok: tok, id: ev.ID, raw: raw, keep: true})
	case "attention.resolved", "attention.timeout":
		if q, ok := m.mine[ev.Subject]; ok && q.tok == tok {
			delete(m.mine, ev.Subject)
			items = append(items, item{op: opSettle, id: ev.Subject, keep: true})
		}
	case "session.ended":
		for id, q := range m.mine {
			if q.tok == tok {
				delete(m.mine, id)
				items = append(items, item{op: opSettle, id: id, keep: true})
			}
		}
	}
	m.mu.Unlock()
	m.enqueue(items...)
	return nil
}

// Redeliver re-sends an event already written (a recorded ack) to every
// member's subscribers, live.
func (s *sink) Redeliver(ev aep.Event, raw []byte) error {
	m := (*Member)(s)
	m.hub.Redeliver(ev, raw)
	if ev.Session != "" {
		m.enqueue(item{op: opRedeliver, tok: token(ev.Source, ev.Session), raw: raw})
	}
	return nil
}

// Operations the pump carries out, in the order they were queued.
type op int

const (
	opEvent      op = iota + 1 // publish an event to the stream
	opOpen                     // state an open question in its bucket
	opSettle                   // remove a settled question from its bucket
	opRedeliver                // re-send an ack, live
	opBind                     // state a claimed session
	opUnbind                   // remove an ended claim
	opRecord                   // record a command's ack
	opPresence                 // state that the member is alive, or leaving
	opRelayEvent               // publish an event a door's emitter wrote (relay.go)
	opRelayLeft                // state that a door's emitter left
	opRelayBind                // state a claimed session of a door's emitter
)

// item is one queued operation.
type item struct {
	op      op
	tok, id string
	key     string // opRecord: the record's key
	raw     []byte
	// seq is, for opOpen, where the events stream stored the question's
	// event (0 when not known).
	seq uint64
	// keep says it may not be dropped when the outbox is over its bound.
	keep bool
	left bool // opPresence: the member is leaving
	// conn and keepDated are, for a relayed operation, the emitter's
	// name and what its leaving does to its dated questions.
	conn      string
	keepDated bool
}

func (it item) size() int { return len(it.raw) + 128 }

// outboxBytes bounds what waits for the cluster while it is unreachable.
// Past it, the oldest telemetry goes first, then the oldest of the rest,
// each drop logged: the bridge is its MCP client's server process and
// must not run out of memory while the cluster is away.
const outboxBytes = 64 << 20

// outbox is the member's queue to the plane. It is safe for concurrent
// use.
type outbox struct {
	// mu guards the fields below; wake is signalled when items arrive.
	mu      sync.Mutex
	items   []item
	bytes   int
	dropped int
	busy    bool // the pump holds items it took
	closed  bool
	wake    chan struct{}
	idle    chan struct{} // closed and replaced when the outbox empties
}

func newOutbox() *outbox {
	return &outbox{wake: make(chan struct{}, 1), idle: make(chan struct{})}
}

// push queues items; it returns how many it dropped to stay in bounds.
func (o *outbox) push(items ...item) (dropped int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return 0
	}
	for _, it := range items {
		o.items = append(o.items, it)
		o.bytes += it.size()
	}
	for o.bytes > outboxBytes && len(o.items) > 0 {
		at := 0
		for i, it := range o.items {
			if !it.keep {
				at = i
				break
			}
		}
		o.bytes -= o.items[at].size()
		o.items = append(o.items[:at:at], o.items[at+1:]...)
		o.dropped++
		dropped++
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return dropped
}

// take returns what is queued, or waits for something until ctx ends.
func (o *outbox) take(ctx context.Context) ([]item, bool) {
	for {
		o.mu.Lock()
		if len(o.items) > 0 {
			items := o.items
			o.items, o.bytes, o.busy = nil, 0, true
			o.mu.Unlock()
			return items, true
		}
		o.busy = false
		close(o.idle)
		o.idle = make(chan struct{})
		o.mu.Unlock()
		select {
		case <-o.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// drained waits until the pump has sent everything queued, or ctx ends.
func (o *outbox) drained(ctx context.Context) error {
	for {
		o.mu.Lock()
		if len(o.items) == 0 && !o.busy {
			o.mu.Unlock()
			return nil
		}
		idle := o.idle
		o.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// enqueue queues items for the pump, logging what the bound dropped.
func (m *Member) enqueue(items ...item) {
	if n := m.out.push(items...); n > 0 {
		m.log.Error("the operator plane is unreachable and its outbox is over its bound; dropped the oldest queued operations",
			"dropped", n, "bound_bytes", outboxBytes)
	}
}

// pump carries out the queued operations in order, each until it
// succeeds: a session's events reach the stream in seq order, and its
// questions' bucket entries after the events that ask and settle them.
func (m *Member) pump() {
	defer m.wg.Done()
	// The event last sent, and where the stream stored it: a question's
	// bucket entry follows its event, and says where it is.
	var lastTok, lastID string
	var lastSeq uint64
	for {
		items, ok := m.out.take(m.ctx)
		if !ok {
			return
		}
		for _, it := range items {
			if it.op == opOpen && it.tok == lastTok && it.id == lastID {
				it.seq = lastSeq
			}
			if m.opts.carrying != nil {
				m.opts.carrying(it)
			}
			var seq uint64
			err := m.retry(m.ctx, "sending to the operator plane", func(ctx context.Context) error {
				var err error
				seq, err = m.carry(ctx, it)
				return err
			})
			if err != nil {
				return // closing
			}
			if it.op == opEvent {
				lastTok, lastID, lastSeq = it.tok, it.id, seq
			}
		}
	}
}

// carry carries out one operation; for an event, it returns where the
// stream stored it. Every statement is signed now, at the attempt that
// sends it, so the time it carries is the time the cluster stores it
// (Options.MaxSkew).
func (m *Member) carry(ctx context.Context, it item) (uint64, error) {
	now := m.opts.now()
	var err error
	switch it.op {
	case opEvent:
		msg := &nats.Msg{Subject: m.n.eventSubject(it.tok), Data: seal(m.key, kindEvent, m.n.prefix, it.tok, now, it.raw)}
		ack, err := m.js.PublishMsg(ctx, msg, jetstream.WithMsgID(it.tok+"."+it.id))
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	case opOpen:
		key := openKey(m.fp, it.id)
		inner := seal(m.key, kindEvent, m.n.prefix, it.tok, now, it.raw)
		_, err = m.kvs.open.Put(ctx, key, seal(m.key, kindOpen, m.n.prefix, key, now, openBody(it.seq, inner)))
	case opSettle:
		err = m.kvs.open.Delete(ctx, openKey(m.fp, it.id))
	case opRedeliver:
		err = m.nc.Publish(m.n.redeliverSubject(it.tok), seal(m.key, kindEvent, m.n.prefix, it.tok, now, it.raw))
	case opBind:
		_, err = m.kvs.sessions.Put(ctx, it.tok, seal(m.key, kindBinding, m.n.prefix, it.tok, now, it.raw))
	case opUnbind:
		err = m.kvs.sessions.Delete(ctx, it.tok)
	case opRecord:
		inner := seal(m.key, kindEvent, m.n.prefix, it.tok, now, it.raw)
		_, err = m.kvs.commands.Put(ctx, it.key, seal(m.key, kindRecord, m.n.prefix, it.key, now, inner))
	case opRelayEvent, opRelayLeft:
		var seq uint64
		err = m.carryRelayed(it, now, func(subject string, data []byte, id string) error {
			var opts []jetstream.PublishOpt
			if id != "" {
				opts = append(opts, jetstream.WithMsgID(id))
			}
			ack, err := m.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, opts...)
			if err == nil {
				seq = ack.Sequence
			}
			return err
		})
		return seq, err
	case opRelayBind:
		_, err = m.kvs.sessions.Put(ctx, it.tok, sealRelayed(m.key, m.relayKey, m.n.prefix, it.tok, now, relayBinding, false, it.conn, it.raw))
	case opPresence:
		body, _ := json.Marshal(presence{Agent: m.opts.Agent, Instance: m.opts.Instance, Left: it.left,
			HeartbeatMS: m.opts.Heartbeat.Milliseconds()})
		_, err = m.kvs.members.Put(ctx, m.fp, seal(m.key, kindPresence, m.n.prefix, m.fp, now, body))
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil // a delete of what is not there is done
	}
	return 0, err
}

package natsplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A follower reads one of the plane's streams in order and keeps reading
// it whatever server goes away: the events stream, or a bucket's stream
// (a bucket is a stream of one subject per key).
//
// It reads through an ephemeral consumer of its own: one replica, in
// memory, on one server of the stream's peers. When that server stops,
// the consumer is gone with it, and the follower makes a new one that
// starts right after the last message it handed over. It knows the
// consumer is gone when
//   - this member's connection drops (the member's epoch ends): the
//     consumer may have been on the server that went;
//   - the consumer's idle heartbeats stop (two are missed: the member's
//     connection lives but the consumer's server does not);
//   - the server says the consumer was deleted, or a delivery is out of
//     order.
//
// Every attempt to make a consumer is bounded (Member.retry): a request
// sent while the cluster elects a new leader is dropped, and must not
// hold the follower for a client library's default timeout.
type follower struct {
	m    *Member
	what string // names what it follows, in logs and errors
	// stream and filter are what it reads; lastPerSubject starts at each
	// subject's last message (a bucket's values) rather than the
	// stream's first.
	stream, filter string
	lastPerSubject bool
	handle         func(msg jetstream.Msg, meta *jetstream.MsgMetadata)
	// id stems its consumers' names; ready is closed once it has first
	// caught up with the stream.
	id    string
	ready chan struct{}

	// The follower's goroutine alone touches these until it ended.
	next   uint64 // the stream sequence after the last one handed over; 0 before the first
	serial int    // counts the consumers it made
	name   string // the current consumer's name, "" if none
	caught bool   // ready is closed
}

// follow starts a follower; the member's wait group owns its goroutine.
func (m *Member) follow(what, stream, filter string, lastPerSubject bool, handle func(jetstream.Msg, *jetstream.MsgMetadata)) *follower {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails (Go 1.24)
	f := &follower{m: m, what: what, stream: stream, filter: filter, lastPerSubject: lastPerSubject, handle: handle,
		id: hex.EncodeToString(b[:]), ready: make(chan struct{})}
	m.followers = append(m.followers, f)
	m.wg.Add(1)
	go f.run()
	return f
}

// followBucket starts a follower of a bucket's values and their changes.
func (m *Member) followBucket(what, bucket string, handle func(entry)) *follower {
	pre := "$KV." + bucket + "."
	return m.follow(what, "KV_"+bucket, pre+">", true, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) {
		if key, ok := strings.CutPrefix(msg.Subject(), pre); ok {
			handle(entryOf(key, msg, meta))
		}
	})
}

// pullBytes bounds what a follower holds that it has not handed over
// yet; it is above the largest message the plane carries.
const pullBytes = 8 << 20

// consumerIdle is how long a consumer the member no longer reads (its
// connection gone, a reset it could not delete the old one in) stays
// on the cluster.
const consumerIdle = 30 * time.Second

// run makes a consumer and reads it, again and again, until the member
// stops.
func (f *follower) run() {
	defer f.m.wg.Done()
	for {
		epoch := f.m.epoch()
		cons, err := f.create()
		if err != nil {
			return // the member stops
		}
		err = f.read(epoch, cons)
		if f.m.ctx.Err() != nil {
			return
		}
		f.m.log.Debug("following the plane again through a new consumer", "stream", f.stream, "what", f.what,
			"after", f.next, "reason", err)
		f.m.wg.Add(1)
		go f.m.dropConsumer(f.stream, f.name)
	}
}

// create makes the next consumer, starting after the last message
// handed over, retrying until it is made or the member stops.
func (f *follower) create() (jetstream.Consumer, error) {
	f.serial++
	f.name = fmt.Sprintf("%s_%d", f.id, f.serial)
	cfg := jetstream.ConsumerConfig{Name: f.name, AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, Replicas: 1,
		InactiveThreshold: consumerIdle, FilterSubject: f.filter, Description: "aep-mcp-bridge operator plane: " + f.what}
	switch {
	case f.next > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, f.next
	case f.lastPerSubject:
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	var cons jetstream.Consumer
	err := f.m.retry(f.m.ctx, "following "+f.what, func(ctx context.Context) error {
		var err error
		cons, err = f.m.js.CreateOrUpdateConsumer(ctx, f.stream, cfg)
		return err
	})
	return cons, err
}

// errOutOfOrder is a delivery that is not the one after the last.
var errOutOfOrder = errors.New("a delivery out of order")

// read hands over what cons delivers, in order, until it fails or epoch
// ends, and returns why it stopped.
func (f *follower) read(epoch context.Context, cons jetstream.Consumer) error {
	hb := f.m.pullHeartbeat()
	it, err := cons.Messages(jetstream.PullHeartbeat(hb), jetstream.PullExpiry(4*hb), jetstream.PullMaxBytes(pullBytes))
	if err != nil {
		return err
	}
	defer it.Stop()
	if cons.CachedInfo().NumPending == 0 {
		f.caughtUp()
	}
	var delivered uint64
	for {
		msg, err := it.Next(jetstream.NextContext(epoch))
		if err != nil {
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		if meta.Sequence.Consumer != delivered+1 {
			return errOutOfOrder
		}
		delivered++
		if meta.Sequence.Stream >= f.next {
			f.next = meta.Sequence.Stream + 1
			f.handle(msg, meta)
		}
		if meta.NumPending == 0 {
			f.caughtUp()
		}
	}
}

// caughtUp records that the follower has read what the stream held
// when it started.
func (f *follower) caughtUp() {
	if !f.caught {
		f.caught = true
		close(f.ready)
	}
}

// dropConsumer deletes a consumer the member no longer reads, bounded;
// one it cannot reach (its server gone) the cluster drops once it has
// been idle for consumerIdle.
func (m *Member) dropConsumer(stream, name string) {
	defer m.wg.Done()
	ctx, cancel := context.WithTimeout(m.ctx, firstAttemptWait)
	defer cancel()
	_ = m.js.DeleteConsumer(ctx, stream, name)
}

// entry is a bucket's entry as a follower reads it.
type entry struct {
	key     string
	value   []byte
	op      jetstream.KeyValueOp
	created time.Time
}

// entryOf reads a bucket's message: a value, or a delete or purge marker
// (the KV-Operation header, or the server's marker reason).
func entryOf(key string, msg jetstream.Msg, meta *jetstream.MsgMetadata) entry {
	e := entry{key: key, value: msg.Data(), op: jetstream.KeyValuePut, created: meta.Timestamp}
	h := msg.Headers()
	switch h.Get("KV-Operation") {
	case "DEL":
		e.op = jetstream.KeyValueDelete
	case "PURGE":
		e.op = jetstream.KeyValuePurge
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge":
		e.op = jetstream.KeyValuePurge
	case "Remove":
		e.op = jetstream.KeyValueDelete
	}
	return e
}

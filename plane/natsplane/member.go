package natsplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Options configure a member. A zero field means its documented default.
type Options struct {
	// URLs are the NATS servers, comma-separated (--nats). Required.
	URLs string
	// Creds is a NATS credentials file (--nats-creds); User and Password
	// are the alternative. They are the cluster's credentials: they carry
	// the plane, and give no right over any session.
	Creds          string
	User, Password string
	// TLS, when set, is the client TLS configuration (--nats-tls-*).
	TLS *tls.Config
	// Prefix names the plane's streams, buckets and subjects, so several
	// fleets share a cluster (--nats-prefix); "" means "aep".
	Prefix string
	// Token is the fleet's shared token: commands between members are
	// sealed with a key derived from it. Required.
	Token string
	// Key is this process's session key: its sessions are certified to
	// it, and it signs everything the member states. Required.
	Key *proof.Key
	// Agent and Instance name the member in its heartbeat.
	Agent, Instance string
	// Replicas is how many copies the cluster keeps of each stream and
	// bucket; 0 means 3 when the server is part of a cluster, else 1.
	Replicas int
	// Hub bounds the front door's hub (bus.HubOptions).
	Hub bus.HubOptions
	// Heartbeat is how often the member states it is alive; another
	// member that hears nothing for three heartbeats takes it for gone,
	// and its questions follow the abandoned rule. 0 means 5s.
	Heartbeat time.Duration
	// MaxSkew bounds how far the time a statement was signed may be from
	// the time the cluster stored it: an open question replayed from an
	// old capture is refused. 0 means 2m.
	MaxSkew time.Duration
	// StoreBytes is what the plane may take of the cluster's storage; 0
	// means 512 MiB. The events stream takes half (its depth per session
	// is Hub.ReplayPerSession, bus.DefaultReplayPerSession), the open
	// questions a quarter, the commands' recorded acks, the claimed
	// sessions, the heartbeats and the notifications' claims a
	// sixteenth each; the named operators and clients take 8 MiB more,
	// whatever StoreBytes is. JetStream reserves it all when the plane
	// is made.
	StoreBytes int64
	// CommandWait bounds a command's round trip to its session's owner
	// when the caller's context has no deadline; 0 means 10s.
	CommandWait time.Duration
	// Logger receives logs; nil discards them. Event content and tokens
	// are never logged.
	Logger *slog.Logger
	// GenerationFile keeps the generation of the newest identities the
	// member took (a file in the front door's state folder), so that
	// after a restart it still refuses an older document put back. ""
	// keeps it in memory only.
	GenerationFile string

	// now is the clock of heartbeats and skew; nil means time.Now.
	now func() time.Time
	// carrying, when set, is called by the pump before it carries out
	// each queued operation: a test holds one there. nil for none.
	carrying func(item)
}

// Member is a process's part in the operator plane on NATS JetStream: a
// plane.Member. See the package documentation.
type Member struct {
	opts  Options
	log   *slog.Logger
	n     names
	key   *proof.Key
	fp    string
	seal  *sealer
	nc    *nats.Conn
	js    jetstream.JetStream
	hub   *bus.Hub
	kvs   buckets
	out   *outbox
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	cmdSb *nats.Subscription
	rdSb  *nats.Subscription
	// followers read the plane's streams, in the order they started.
	followers []*follower

	// epochMu guards epochCtx, which ends when the connection drops.
	epochMu     sync.Mutex
	epochCtx    context.Context
	epochCancel context.CancelFunc

	// ingest serializes what the member puts in its hub from the plane,
	// and guards the state below it.
	ingest   sync.Mutex
	settled  *recent // questions settled by their owners (question id)
	ended    *recent // sessions ended by their owners (token)
	peers    map[string]*peer
	remote   map[string]remoteBinding // claimed sessions of other members, by token
	refusals int                      // events the hub refused, logged
	evNext   uint64                   // the events stream's sequence after the last one read
	parked   []parkedQ                // open questions read before their events

	// ids are the named operators and clients (identities.go).
	ids identities
	// notifyKey keys the MACs of notification claims (notified.go).
	notifyKey []byte
	// relayKey keys the MACs of relayed statements (relay.go).
	relayKey []byte
	// relayers are the emitters each other door relayed, by their
	// writer in the hub (relay.go). m.ingest guards it.
	relayers map[string]map[string]bool
	// relayedFrom are the doors that relayed sessions whose claims are
	// not read yet (relay.go). m.ingest guards it.
	relayedFrom *relayHints

	// mu guards the fields below.
	mu     sync.Mutex
	claims map[string]localClaim // this process's sessions, by session
	mine   map[string]mineQ      // this process's open questions, by id
	closed bool
}

type buckets struct {
	open, sessions, commands, members jetstream.KeyValue
	// identities holds the named operators and clients (identities.go);
	// notified the claims of notifications sent (notified.go).
	identities, notified jetstream.KeyValue
}

type localClaim struct {
	b   plane.Binding
	tok string
	t   plane.Target
}

// mineQ is an open question of this process's: its session's token and
// the envelope it was stated with, to state it again if the bucket loses
// it.
type mineQ struct {
	tok, session string
	raw          []byte
}

type remoteBinding struct {
	fp string
	b  plane.Binding
	// relayed: the session is a door's emitter's (relay.go), and fp the
	// door's.
	relayed bool
}

var _ plane.Member = (*Member)(nil)

// Open connects to the cluster, makes the plane's streams and buckets if
// they are missing, and catches up: when it returns, the member's hub
// holds every member's open questions and the history the stream keeps.
// ctx bounds all of it, a cluster still electing its leaders included.
func Open(ctx context.Context, o Options) (*Member, error) {
	switch {
	case o.URLs == "":
		return nil, errors.New("the operator plane on NATS needs server URLs: pass --nats nats://host:4222[,…]")
	case o.Token == "":
		return nil, errors.New("the operator plane on NATS needs the fleet's token (AEP_TOKEN or --token): commands between bridges are sealed with it")
	case o.Key == nil:
		return nil, errors.New("the operator plane on NATS needs this process's session key")
	}
	if o.Prefix == "" {
		o.Prefix = "aep"
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 5 * time.Second
	}
	if o.MaxSkew <= 0 {
		o.MaxSkew = 2 * time.Minute
	}
	if o.StoreBytes <= 0 {
		o.StoreBytes = 512 << 20
	}
	if o.CommandWait <= 0 {
		o.CommandWait = 10 * time.Second
	}
	if o.now == nil {
		o.now = time.Now
	}
	n, err := namesOf(o.Prefix)
	if err != nil {
		return nil, err
	}
	s, err := newSealer(o.Token, o.Prefix)
	if err != nil {
		return nil, err
	}
	ids, err := identitySealer(o.Token, o.Prefix)
	if err != nil {
		return nil, err
	}
	gen, err := loadGeneration(o.GenerationFile)
	if err != nil {
		return nil, err
	}
	notifyKey, err := notifyKeyOf(o.Token, o.Prefix)
	if err != nil {
		return nil, err
	}
	relayKey, err := relayKeyOf(o.Token, o.Prefix)
	if err != nil {
		return nil, err
	}
	m := &Member{opts: o, log: o.Logger, n: n, key: o.Key, fp: o.Key.Fingerprint(), seal: s, notifyKey: notifyKey, relayKey: relayKey,
		relayers: map[string]map[string]bool{}, relayedFrom: newRelayHints(settledKept),
		ids:     identities{seal: ids, dir: identity.NewDirectory(nil), subs: map[*IdentitySource]struct{}{}, used: store.Seen{}},
		settled: newRecent(settledKept), ended: newRecent(settledKept), peers: map[string]*peer{},
		remote: map[string]remoteBinding{}, claims: map[string]localClaim{}, mine: map[string]mineQ{}}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.log = m.log.With("plane", o.Prefix)
	m.ids.gen, m.ids.genFile = gen, o.GenerationFile
	hubOpts := o.Hub
	if hubOpts.Now == nil {
		hubOpts.Now = o.now
	}
	m.hub = bus.NewHubWith(hubOpts)
	m.ctx, m.stop = context.WithCancel(context.Background())
	m.epochCtx, m.epochCancel = context.WithCancel(m.ctx)
	if err := m.connect(ctx); err != nil {
		m.stop()
		return nil, err
	}
	m.out = newOutbox()
	if err := m.start(ctx); err != nil {
		m.shutdown(context.Background(), false)
		return nil, err
	}
	return m, nil
}

// epoch returns a context that ends when the member's connection drops
// or the member stops: a request in flight then gets no reply, and a
// consumer read through the server that went may be gone.
func (m *Member) epoch() context.Context {
	m.epochMu.Lock()
	defer m.epochMu.Unlock()
	return m.epochCtx
}

// dropped ends the epoch: the connection dropped.
func (m *Member) dropped() {
	m.epochMu.Lock()
	defer m.epochMu.Unlock()
	m.epochCancel()
	m.epochCtx, m.epochCancel = context.WithCancel(m.ctx)
}

// pullHeartbeat is how often a follower's consumer says it is alive when
// it has nothing to deliver: half the member's heartbeat, within 1s-5s
// (a server slowed by load may miss a shorter one). Two missed, it is
// taken for gone.
func (m *Member) pullHeartbeat() time.Duration {
	return min(max(m.opts.Heartbeat/2, time.Second), 5*time.Second)
}

// connect opens the NATS connection and makes the streams and buckets,
// retrying while the cluster cannot serve JetStream yet.
func (m *Member) connect(ctx context.Context) error {
	o := m.opts
	// A server that stops answering without closing the connection (its
	// machine gone, a partition) is found by pings: three heartbeats of
	// silence (two seconds at least), not NATS's default of minutes.
	copts := []nats.Option{nats.Name("aep-mcp-bridge " + o.Instance), nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond), nats.NoEcho(), nats.RetryOnFailedConnect(false),
		nats.PingInterval(max(o.Heartbeat, 2*time.Second)), nats.MaxPingsOutstanding(goneAfter),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			m.dropped()
			if !nc.IsClosed() {
				m.log.Info("the connection to the operator plane dropped; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			m.log.Info("reconnected to the operator plane", "server", redactURLs(nc.ConnectedUrl()))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			m.log.Warn("the operator plane's connection reported an error", "err", err)
		})}
	nc, err := nats.Connect(o.URLs, append(copts, credentialOptions(o)...)...)
	if err != nil {
		return fmt.Errorf("connecting to the NATS servers %s: %w; check --nats and --nats-creds", redactURLs(o.URLs), err)
	}
	m.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return err
	}
	m.js = js
	if err := m.ensure(ctx, replicasOf(o, nc)); err != nil {
		nc.Close()
		return err
	}
	return nil
}

// credentialOptions are the connection options of o's cluster
// credentials and TLS.
func credentialOptions(o Options) []nats.Option {
	var out []nats.Option
	switch {
	case o.Creds != "":
		out = append(out, nats.UserCredentials(o.Creds))
	case o.User != "":
		out = append(out, nats.UserInfo(o.User, o.Password))
	}
	if o.TLS != nil {
		out = append(out, nats.Secure(o.TLS))
	}
	return out
}

// replicasOf is how many copies of each stream and bucket o asks for on
// the cluster nc is connected to: 3 on a cluster, else 1, unless set.
func replicasOf(o Options, nc *nats.Conn) int {
	if o.Replicas != 0 {
		return o.Replicas
	}
	if nc.ConnectedClusterName() != "" {
		return 3
	}
	return 1
}

// ensure makes the events stream and the buckets, or updates their
// bounds, one at a time, each retried on its own (Member.retry) until it
// is made or ctx ends. Each is a few requests that the cluster's meta
// leader and then the new stream's Raft group must answer; retrying them
// all together would send again, in every attempt, the updates of those
// already made (each a proposal through the meta leader), so that on a
// loaded cluster no attempt would reach the last one within its bound.
func (m *Member) ensure(ctx context.Context, replicas int) error {
	depth := int64(m.opts.Hub.ReplayPerSession)
	if depth == 0 {
		depth = bus.DefaultReplayPerSession
	}
	events := func(ctx context.Context) error {
		_, err := m.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: m.n.events, Subjects: []string{m.n.eventSubjects}, Storage: jetstream.FileStorage, Replicas: replicas,
			MaxMsgsPerSubject: depth, MaxBytes: m.opts.StoreBytes / 2, Discard: jetstream.DiscardOld,
			MaxMsgSize: int32(bus.DefaultMaxEvent + envelopeHead + relayOverhead), Duplicates: 2 * time.Minute,
			Description: "aep-mcp-bridge operator plane: every session's events"})
		return err
	}
	kv := func(to *jetstream.KeyValue, name string, ttl time.Duration, maxBytes int64, desc string) func(context.Context) error {
		return func(ctx context.Context) error {
			b, err := m.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1, TTL: ttl, MaxBytes: maxBytes,
				Storage: jetstream.FileStorage, Replicas: replicas, Description: "aep-mcp-bridge operator plane: " + desc})
			if err == nil {
				*to = b
			}
			return err
		}
	}
	b := m.opts.StoreBytes
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"the plane's events stream", events},
		{"the bucket of open questions", kv(&m.kvs.open, m.n.open, 0, b/4, "open questions")},
		{"the bucket of claimed sessions", kv(&m.kvs.sessions, m.n.sessions, 0, b/16, "claimed sessions")},
		{"the bucket of commands' acks", kv(&m.kvs.commands, m.n.commands, 24*time.Hour, b/16, "commands' recorded acks")},
		{"the bucket of members' heartbeats", kv(&m.kvs.members, m.n.members, max(20*m.opts.Heartbeat, time.Minute), b/16, "members' heartbeats")},
		{"the bucket of notifications sent", kv(&m.kvs.notified, m.n.notified, notifiedKept, b/16, "notifications sent")},
		{"the bucket of named operators and clients", func(ctx context.Context) error {
			kv, err := ensureIdentities(ctx, m.js, m.n, replicas)
			if err == nil {
				m.kvs.identities = kv
			}
			return err
		}},
	}
	for _, s := range steps {
		if err := m.retry(ctx, "making "+s.what, s.do); err != nil {
			return err
		}
	}
	return nil
}

// Bounds of one request to the cluster (Member.retry).
const (
	firstAttemptWait = 2 * time.Second
	lastAttemptWait  = 5 * time.Second
)

// retry runs f until it succeeds or ctx ends, backing off from 50ms to
// 1s between attempts. A cluster electing its leaders drops requests or
// answers for a few seconds that it cannot serve JetStream yet; so each
// attempt is bounded, first by firstAttemptWait, doubling up to
// lastAttemptWait (a slow cluster still gets the time it needs), and
// ends at once when the connection drops (its reply will never come).
func (m *Member) retry(ctx context.Context, what string, f func(context.Context) error) error {
	wait, attempt := 50*time.Millisecond, firstAttemptWait
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		stop := context.AfterFunc(m.epoch(), cancel)
		err := f(actx)
		stop()
		cancel()
		if err == nil {
			return nil
		}
		m.log.Debug("a request to the operator plane failed; sending it again", "what", what, "err", err, "bound", attempt)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-t.C:
		}
		wait, attempt = min(wait*2, time.Second), min(attempt*2, lastAttemptWait)
	}
}

// redactURLs drops credentials from URLs for a message.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if scheme := strings.Index(p, "://"); scheme >= 0 && scheme < at {
				parts[i] = p[:scheme+3] + "…@" + p[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// Hub returns the front door's hub.
func (m *Member) Hub() *bus.Hub { return m.hub }

// Sink returns where this process's session emitters write.
func (m *Member) Sink() plane.Sink { return (*sink)(m) }

// Fingerprint returns the fingerprint of the member's key.
func (m *Member) Fingerprint() string { return m.fp }

// Close states that the member leaves, sends what it queued, deletes
// its consumers and stops, all bounded by ctx. The other members then
// apply the abandoned rule to its questions at once.
func (m *Member) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	err := m.out.drained(ctx)
	m.flushSeen(ctx)
	m.state(true)
	m.shutdown(ctx, true)
	if err != nil {
		return fmt.Errorf("leaving the operator plane with events still queued: %w", err)
	}
	return nil
}

// Kill stops the member without a word, as a crash would: the others
// take it for gone once its heartbeats stop. For tests.
func (m *Member) Kill() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.shutdown(context.Background(), false)
}

// shutdown stops every goroutine and the connection. When graceful, it
// first deletes the member's consumers, bounded by ctx; else it leaves
// them to the cluster (consumerIdle).
func (m *Member) shutdown(ctx context.Context, graceful bool) {
	m.stop()
	for _, s := range []*nats.Subscription{m.cmdSb, m.rdSb} {
		if s != nil {
			s.Unsubscribe()
		}
	}
	m.out.close()
	m.wg.Wait()
	if graceful && ctx.Err() == nil {
		var wg sync.WaitGroup
		for _, f := range m.followers {
			if f.name != "" {
				wg.Go(func() { _ = m.js.DeleteConsumer(ctx, f.stream, f.name) })
			}
		}
		wg.Wait()
	}
	if m.nc != nil {
		m.nc.Close()
	}
	m.hub.Close()
}

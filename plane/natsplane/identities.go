package natsplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
)

// The named operators and clients of a fleet live on the plane, so that
// every front door authenticates the same ones: the identity document
// (package identity: names, rights, scopes, groups, expiry, and salted
// hashes of the credentials, never a credential) in the bucket
// P_identities, under the key "doc", and when each record was last used
// under "seen.<digest of its name>".
//
// Both are sealed (AES-256-GCM, under a key derived from the fleet's
// token, another than the commands'): a verifier keys the credential
// proof at /join, so the cluster's credentials must not read it, and a
// record only the token's holders could write is one an impostor with
// the cluster's credentials cannot add. Each document carries a
// generation, above every earlier one's: a front door that has read a
// generation refuses an older one (a captured document put back to undo
// a revocation). A deleted document is the empty one: everyone's access
// ends.
//
// A generation alone does not stop a capture put back: a door that
// starts after the put, or a command that changes the records next,
// would take it. So each document also seals the revision (the stream
// sequence) it is written at, and is written only there (the put
// expects the stream's last sequence): a document found at another
// revision was put back by someone else, and front doors and commands
// refuse it (errPutBack). Documents sealed before revisions were sealed
// carry none; for them, the server's put time may not be later than the
// sealed write time by more than putBackSlack.
//
// Changes are compare-and-set on the stream's last sequence and on the
// key's last revision, so two commands that change the records at once
// (on two machines) never lose a change, whichever server answers their
// reads.

// identitiesKey is the document's key in the bucket.
const identitiesKey = "doc"

// seenPrefix starts the keys of the last uses.
const seenPrefix = "seen."

// identitiesBytes bounds the bucket on the cluster: a document is at
// most the cluster's largest message (NATS's max_payload, 1 MiB by
// default), and the last uses are a small value per record.
const identitiesBytes = 8 << 20

// sealedDocument is the document as the bucket keeps it, sealed.
type sealedDocument struct {
	// Gen orders the documents: each one's is above its predecessor's
	// and at least the time it was written, in nanoseconds, so a
	// document written after the key was deleted still comes after
	// every one before.
	Gen uint64    `json:"gen"`
	At  time.Time `json:"at"`
	Doc []byte    `json:"doc"`
	// Rev is the revision of the key (the bucket's stream sequence) the
	// document was written at; 0 in documents written before it was
	// sealed.
	Rev uint64 `json:"rev,omitempty"`
}

// putBackSlack bounds how much later than its sealed write time a
// document without a sealed revision may have been put on the bucket
// (the server's timestamp): its writer puts it right after sealing it,
// so more is a capture put back, or clocks apart by more than this.
const putBackSlack = 2 * time.Minute

// ErrPutBack is a document of identities on the plane that someone put
// back (a capture of an earlier one, perhaps to undo a revocation): it is
// not where its writer wrote it.
var ErrPutBack = errors.New("the identities on the operator plane were put back by someone other than their writer")

// checkPlaced returns ErrPutBack, with what was seen, unless the sealed
// document sd is where its writer put it: at revision rev, put at
// created.
func checkPlaced(sd sealedDocument, rev uint64, created time.Time) error {
	switch {
	case sd.Rev != 0 && sd.Rev != rev:
		return fmt.Errorf("%w: the document written at %s for revision %d is at revision %d", ErrPutBack, sd.At.Format(time.RFC3339), sd.Rev, rev)
	case sd.Rev == 0 && created.Sub(sd.At) > putBackSlack:
		return fmt.Errorf("%w: the document written at %s was put at %s, more than %s later", ErrPutBack, sd.At.Format(time.RFC3339), created.UTC().Format(time.RFC3339), putBackSlack)
	}
	return nil
}

// putBackAdvice says what to do about a put back document.
const putBackAdvice = "someone holding the NATS cluster's credentials can write the bucket: rotate those credentials, then run the command again with --rebuild-identities, which starts the plane's records afresh from this change alone (add again every operator and client you trust)"

// ensureIdentities makes the identities bucket if it is missing and
// returns it; one that exists is taken as it is.
func ensureIdentities(ctx context.Context, js jetstream.JetStream, n names, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, n.identities)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, err
	}
	kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: n.identities, History: 1, MaxBytes: identitiesBytes,
		Storage: jetstream.FileStorage, Replicas: replicas, Description: "aep-mcp-bridge operator plane: named operators and clients"})
	if errors.Is(err, jetstream.ErrBucketExists) {
		return js.KeyValue(ctx, n.identities) // made meanwhile by another member
	}
	return kv, err
}

// identitySealer derives the key that seals the identities of the plane
// prefix from the fleet's token.
func identitySealer(token, prefix string) (*sealer, error) {
	return newSealerFor(token, "identities v1 "+prefix)
}

// errNotOurs is a document that does not open with this token.
var errNotOurs = errors.New("the identities on the operator plane do not open with this token: give the fleet's token (AEP_TOKEN or --token), the one every bridge of the plane has")

// openDocument opens the sealed document b of the plane prefix.
func openDocument(s *sealer, prefix string, b []byte) (sealedDocument, *identity.Document, error) {
	plain, _, err := s.open(adOf("identities", prefix, identitiesKey), b)
	if err != nil {
		return sealedDocument{}, nil, errNotOurs
	}
	var sd sealedDocument
	if err := json.Unmarshal(plain, &sd); err != nil {
		return sealedDocument{}, nil, fmt.Errorf("the identities on the operator plane: %w", err)
	}
	d, err := identity.Decode(sd.Doc)
	if err != nil {
		return sealedDocument{}, nil, fmt.Errorf("the identities on the operator plane: %w", err)
	}
	return sd, d, nil
}

// seenKey is the bucket key of the last use of the record key (a
// store.OperatorKey or store.ClientKey).
func seenKey(record string) string {
	sum := sha256.Sum256([]byte(record))
	return seenPrefix + hex.EncodeToString(sum[:16])
}

// IdentityStore changes and reads the named operators and clients on
// the plane, as the CLI does: a connection to the cluster and the
// bucket, without joining the plane.
type IdentityStore struct {
	nc     *nats.Conn
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	stream jetstream.Stream
	subj   string
	seal   *sealer
	prefix string
	where  string

	// Rebuild, when the document in force was put back (ErrPutBack),
	// applies a change to the empty document instead of refusing it.
	Rebuild bool
}

// OpenIdentities connects to the cluster of o (URLs, credentials, TLS,
// Prefix, Token; the rest is unused) and makes the identities bucket if
// it is missing, bounded by ctx.
func OpenIdentities(ctx context.Context, o Options) (*IdentityStore, error) {
	switch {
	case o.URLs == "":
		return nil, errors.New("the operator plane on NATS needs server URLs: pass --nats nats://host:4222[,…]")
	case o.Token == "":
		return nil, errors.New("the identities on the operator plane need the fleet's token (AEP_TOKEN or --token): they are sealed with it")
	}
	if o.Prefix == "" {
		o.Prefix = "aep"
	}
	n, err := namesOf(o.Prefix)
	if err != nil {
		return nil, err
	}
	s, err := identitySealer(o.Token, o.Prefix)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(o.URLs, append(credentialOptions(o), nats.Name("aep-mcp-bridge identities"), nats.NoReconnect())...)
	if err != nil {
		return nil, fmt.Errorf("connecting to the NATS servers %s: %w; check --nats and --nats-creds", redactURLs(o.URLs), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	var (
		kv     jetstream.KeyValue
		stream jetstream.Stream
	)
	err = whileUnavailable(ctx, func(ctx context.Context) error {
		var err error
		if kv, err = ensureIdentities(ctx, js, n, replicasOf(o, nc)); err != nil {
			return err
		}
		stream, err = js.Stream(ctx, "KV_"+n.identities)
		return err
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("reaching the identities bucket %s on the NATS servers %s: %w", n.identities, redactURLs(o.URLs), err)
	}
	return &IdentityStore{nc: nc, js: js, kv: kv, stream: stream, subj: n.identitiesFilter(), seal: s, prefix: o.Prefix,
		where: fmt.Sprintf("the operator plane %q on %s", o.Prefix, redactURLs(o.URLs))}, nil
}

// whileUnavailable runs f until it succeeds, fails for a reason other
// than a cluster that cannot serve JetStream yet (electing its leaders:
// a 503, no responders, an attempt that got no answer; not a server
// without JetStream, which is a 503 too), or ctx ends.
// Each attempt is bounded by lastAttemptWait.
func whileUnavailable(ctx context.Context, f func(context.Context) error) error {
	wait := 50 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, lastAttemptWait)
		err := f(actx)
		cancel()
		var api *jetstream.APIError
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabled ||
			api.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabledForAccount):
			// Also a 503, but no election ends it: the server (or the
			// account) runs without JetStream.
			return fmt.Errorf("%w: the operator plane needs NATS servers with JetStream enabled (nats-server -js) for this account", err)
		case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrNoResponders) &&
			!(errors.As(err, &api) && api.Code == 503):
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(wait*2, time.Second)
	}
}

// readWhileUnavailable is whileUnavailable for a read that returns a
// value: the value of the attempt that succeeded, or the error that
// ended the attempts.
func readWhileUnavailable[T any](ctx context.Context, read func(context.Context) (T, error)) (T, error) {
	var v T
	err := whileUnavailable(ctx, func(ctx context.Context) error {
		var err error
		v, err = read(ctx)
		return err
	})
	return v, err
}

// Where names the store in messages: the plane's prefix and servers.
func (s *IdentityStore) Where() string { return s.where }

// Close closes the connection.
func (s *IdentityStore) Close() { s.nc.Close() }

// load returns the document in force, its generation and the revision
// of the key's last message: the document's, a delete or purge marker's
// (the empty document), or 0 when the key was never written. A document
// put back is returned with ErrPutBack.
//
// Any of the stream's servers may answer the read (the bucket allows
// direct gets), one that has not applied the latest write yet too: the
// revision is what lets Update refuse to build on what it read if that
// is not the key's last message. A bucket just made gets no responders
// to those reads until its servers' subscriptions reach the server this
// store is connected to: load, like every read of the store, asks again
// while the cluster cannot serve it yet.
func (s *IdentityStore) load(ctx context.Context) (*identity.Document, uint64, uint64, error) {
	msg, err := readWhileUnavailable(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return s.stream.GetLastMsgForSubject(ctx, s.subj)
	})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return &identity.Document{}, 0, 0, nil
	case err != nil:
		return nil, 0, 0, fmt.Errorf("reading the identities on %s: %w", s.where, err)
	}
	switch msg.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return &identity.Document{}, 0, msg.Sequence, nil
	}
	sd, d, err := openDocument(s.seal, s.prefix, msg.Data)
	if err != nil {
		return nil, 0, 0, err
	}
	return d, sd.Gen, msg.Sequence, checkPlaced(sd, msg.Sequence, msg.Time)
}

// Load returns the document in force: the empty one when there is none.
// It refuses one put back (ErrPutBack).
func (s *IdentityStore) Load(ctx context.Context) (*identity.Document, error) {
	d, _, _, err := s.load(ctx)
	if errors.Is(err, ErrPutBack) {
		return nil, fmt.Errorf("%w on %s; %s", err, s.where, putBackAdvice)
	}
	return d, err
}

// updateBackoff bounds the pause, jittered, before Update reads again
// after something else was written on the bucket between its read and
// its write: short, since a write takes a round trip, but spread so
// that racing commands stop colliding.
const updateBackoff = 50 * time.Millisecond

// backoff waits a random pause before attempt (from 1) of a write that
// lost a race, up to updateBackoff, or until ctx is done (its error).
func backoff(ctx context.Context, attempt int) error {
	ceiling := min(time.Millisecond<<min(attempt, 6), updateBackoff)
	t := time.NewTimer(rand.N(ceiling) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Update changes the document: it reads it, calls change, and writes the
// result if nothing was written on the bucket meanwhile, else reads
// again. A change that fails leaves the document as it was. It refuses
// to build on a document put back (ErrPutBack) unless Rebuild is set.
// It tries again as long as ctx lives, however many commands race it:
// give ctx a deadline.
func (s *IdentityStore) Update(ctx context.Context, change func(*identity.Document) error) error {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return fmt.Errorf("the identities on %s kept changing while this command tried to change them (%d tries): %w; run it again", s.where, attempt, err)
			}
		}
		info, err := readWhileUnavailable(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) {
			return s.stream.Info(ctx)
		})
		if err != nil {
			return fmt.Errorf("reading the identities bucket on %s: %w", s.where, err)
		}
		last := info.State.LastSeq
		d, gen, rev, err := s.load(ctx)
		switch {
		case errors.Is(err, ErrPutBack) && s.Rebuild:
			d = &identity.Document{}
		case errors.Is(err, ErrPutBack):
			return fmt.Errorf("%w on %s, so this command does not build on it; %s", err, s.where, putBackAdvice)
		case err != nil:
			return err
		}
		if rev > last {
			continue // written meanwhile: read it again
		}
		if err := change(d); err != nil {
			return err
		}
		now := time.Now()
		sd := sealedDocument{Gen: max(gen+1, uint64(now.UnixNano())), At: now.UTC(), Doc: d.Encode(), Rev: last + 1}
		plain, err := json.Marshal(sd)
		if err != nil {
			return err
		}
		b := s.seal.seal(adOf("identities", s.prefix, identitiesKey), plain)
		if limit := s.nc.MaxPayload() - 1024; int64(len(b)) > limit {
			return fmt.Errorf("the identities would take %d bytes on %s, above the %d its servers take in one message (their max_payload): revoke records no longer used, or raise max_payload", len(b), s.where, limit)
		}
		// Only at the sequence sealed: anything written on the bucket
		// since its last sequence was read (another command, a last use)
		// makes the server refuse it. And only over the document read:
		// a server behind the stream's leader may have answered the
		// read with an older one, which a write at the stream's last
		// sequence alone would silently undo the changes after.
		_, err = s.js.Publish(ctx, s.subj, b, jetstream.WithExpectLastSequence(last), jetstream.WithExpectLastSequencePerSubject(rev))
		var ae *jetstream.APIError
		if errors.As(err, &ae) && (ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			continue // written meanwhile: read it again
		}
		if err != nil {
			return fmt.Errorf("writing the identities on %s: %w", s.where, err)
		}
		return nil
	}
}

// Seen returns when each record of d was last used by a front door, by
// store.OperatorKey and store.ClientKey. It is informational: a value
// that does not open is left out.
func (s *IdentityStore) Seen(ctx context.Context, d *identity.Document) (store.Seen, error) {
	out := store.Seen{}
	var keys []string
	for _, o := range d.Operators {
		keys = append(keys, store.OperatorKey(o.Name))
	}
	for _, c := range d.Clients {
		keys = append(keys, store.ClientKey(c.Name))
	}
	for _, k := range keys {
		e, err := readWhileUnavailable(ctx, func(ctx context.Context) (jetstream.KeyValueEntry, error) {
			return s.kv.Get(ctx, seenKey(k))
		})
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading when identities were last used on %s: %w", s.where, err)
		}
		if at, ok := openSeen(s.seal, s.prefix, e.Key(), e.Value()); ok {
			out[k] = at
		}
	}
	return out, nil
}

// openSeen opens the sealed last use b stored under key.
func openSeen(s *sealer, prefix, key string, b []byte) (time.Time, bool) {
	plain, _, err := s.open(adOf("seen", prefix, key), b)
	if err != nil {
		return time.Time{}, false
	}
	var at time.Time
	if at.UnmarshalText(plain) != nil {
		return time.Time{}, false
	}
	return at, true
}

// identities is what a member knows of the plane's identities. Its mu
// guards everything.
type identities struct {
	seal *sealer
	mu   sync.Mutex
	dir  *identity.Directory
	gen  uint64
	// genFile keeps gen across restarts (Options.GenerationFile).
	genFile string
	// failed is the last failure reported, so it is reported once.
	failed string
	subs   map[*IdentitySource]struct{}
	used   store.Seen
}

// takeIdentities puts a new document in force: on a put, one that opens,
// is where its writer put it (at revision rev) and is not older than the
// one in force; on a delete or purge, the empty document.
func (m *Member) takeIdentities(e entry, rev uint64) {
	ids := &m.ids
	var d *identity.Document
	var gen uint64
	if e.op == jetstream.KeyValuePut {
		sd, doc, err := openDocument(ids.seal, m.n.prefix, e.value)
		if err != nil {
			m.identityFailure(fmt.Errorf("%w; the named operators and clients stay those last read", err))
			return
		}
		if err := checkPlaced(sd, rev, e.created); err != nil {
			m.identityFailure(fmt.Errorf("%w (a revocation undone by someone holding the cluster's credentials?); it is refused, the named operators and clients stay those last read: rotate the cluster's credentials and write the records again with --rebuild-identities", err))
			return
		}
		d, gen = doc, sd.Gen
	} else {
		d = &identity.Document{}
	}
	ids.mu.Lock()
	if gen != 0 && gen < ids.gen {
		ids.mu.Unlock()
		m.identityFailure(errors.New("a document of identities older than the one in force (or than the newest this front door took before it restarted) was put on the operator plane (a revocation undone by someone holding the cluster's credentials?); it is refused"))
		return
	}
	if gen > ids.gen && ids.genFile != "" {
		if err := saveGeneration(ids.genFile, gen); err != nil {
			m.log.Error("named operators and clients: the newest generation is not kept across a restart", "err", err)
		}
	}
	ids.gen = max(ids.gen, gen)
	ids.dir, ids.failed = identity.NewDirectory(d), ""
	for s := range ids.subs {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	ids.mu.Unlock()
}

// loadGeneration reads the generation kept in path: 0 when path is "" or
// there is no file yet.
func loadGeneration(path string) (uint64, error) {
	if path == "" {
		return 0, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the newest generation of the identities this front door took: %w", err)
	}
	gen, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s does not hold a generation of the identities (a decimal number): %w; remove it to take the plane's current document as it is", path, err)
	}
	return gen, nil
}

// saveGeneration replaces the generation kept in path with gen,
// atomically, readable by the owner alone.
func saveGeneration(path string, gen uint64) error {
	// The first document can arrive before anything else made the
	// state folder.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(strconv.FormatUint(gen, 10) + "\n")
	if err = errors.Join(err, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// identityFailure reports err once to the log and every source.
func (m *Member) identityFailure(err error) {
	ids := &m.ids
	ids.mu.Lock()
	if err.Error() == ids.failed {
		ids.mu.Unlock()
		return
	}
	ids.failed = err.Error()
	subs := make([]*IdentitySource, 0, len(ids.subs))
	for s := range ids.subs {
		subs = append(subs, s)
	}
	ids.mu.Unlock()
	m.log.Error("named operators and clients", "err", err)
	for _, s := range subs {
		if s.o.OnError != nil {
			s.o.OnError(err)
		}
	}
}

// directory returns the directory in force.
func (m *Member) directory() *identity.Directory {
	m.ids.mu.Lock()
	defer m.ids.mu.Unlock()
	return m.ids.dir
}

// used records a last use, which flushSeen writes.
func (m *Member) used(key string, at time.Time) {
	m.ids.mu.Lock()
	defer m.ids.mu.Unlock()
	if at.After(m.ids.used[key]) {
		m.ids.used[key] = at
	}
}

// seenEvery is how often, at most, a member writes the last uses.
const seenEvery = 30 * time.Second

// recordSeen writes the last uses every seenEvery until the member
// stops.
func (m *Member) recordSeen() {
	defer m.wg.Done()
	t := time.NewTicker(seenEvery)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(m.epoch(), firstAttemptWait)
			m.flushSeen(ctx)
			cancel()
		}
	}
}

// flushSeen writes the recorded last uses, bounded by ctx, each where no
// later one is stored. A last use it could not write is lost: it is
// informational.
func (m *Member) flushSeen(ctx context.Context) {
	m.ids.mu.Lock()
	updates := m.ids.used
	m.ids.used = store.Seen{}
	m.ids.mu.Unlock()
	for k, at := range updates {
		key := seenKey(k)
		if e, err := m.kvs.identities.Get(ctx, key); err == nil {
			if prev, ok := openSeen(m.ids.seal, m.n.prefix, key, e.Value()); ok && !at.After(prev) {
				continue
			}
		}
		text, _ := at.UTC().Truncate(time.Second).MarshalText() // a time in years 0-9999 always marshals
		if _, err := m.kvs.identities.Put(ctx, key, m.ids.seal.seal(adOf("seen", m.n.prefix, key), text)); err != nil {
			m.log.Debug("recording when an identity was last used", "err", err)
		}
	}
}

// IdentityOptions configure an IdentitySource.
type IdentityOptions struct {
	// OnLoad is called with each new directory put in force, from Run's
	// goroutine. Nil means nothing is called.
	OnLoad func(*identity.Directory)
	// OnError is called when a document on the plane is refused (it does
	// not open with the token, or it is older than the one in force);
	// the last good directory stays in force. Nil means nothing is
	// called.
	OnError func(error)
}

// IdentitySource keeps a front door in step with the plane's named
// operators and clients, as a store.Watcher does with the state folder's
// file: a store.Source. A change made on any machine reaches OnLoad as
// soon as the member reads it, typically within milliseconds.
type IdentitySource struct {
	m    *Member
	o    IdentityOptions
	wake chan struct{}

	// mu guards last: the directory the source last handed out.
	mu   sync.Mutex
	last *identity.Directory
}

var _ store.Source = (*IdentitySource)(nil)

// Identities returns a source of the plane's named operators and
// clients. Run it to have OnLoad called.
func (m *Member) Identities(o IdentityOptions) *IdentitySource {
	s := &IdentitySource{m: m, o: o, wake: make(chan struct{}, 1)}
	m.ids.mu.Lock()
	m.ids.subs[s] = struct{}{}
	m.ids.mu.Unlock()
	return s
}

// Directory returns the directory in force.
func (s *IdentitySource) Directory() *identity.Directory {
	d := s.m.directory()
	s.mu.Lock()
	s.last = d
	s.mu.Unlock()
	return d
}

// Used records that the record key (store.OperatorKey, store.ClientKey)
// was used at at; the member writes it on the plane, at most every 30
// seconds and when it leaves.
func (s *IdentitySource) Used(key string, at time.Time) { s.m.used(key, at) }

// Run calls OnLoad with every directory put in force that the source
// has not handed out, until ctx is done (it returns ctx's error) or the
// member stops (nil).
func (s *IdentitySource) Run(ctx context.Context) error {
	defer func() {
		s.m.ids.mu.Lock()
		delete(s.m.ids.subs, s)
		s.m.ids.mu.Unlock()
	}()
	for {
		d := s.m.directory()
		s.mu.Lock()
		changed := d != s.last
		s.last = d
		s.mu.Unlock()
		if changed && s.o.OnLoad != nil {
			s.o.OnLoad(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.m.ctx.Done():
			return nil // the member left the plane: nothing changes any more
		case <-s.wake:
		}
	}
}

// identitiesFilter is the subject of the document in the bucket.
func (n names) identitiesFilter() string { return "$KV." + n.identities + "." + identitiesKey }

// followIdentities starts the follower of the identities document.
func (m *Member) followIdentities() *follower {
	return m.follow("the named operators and clients", "KV_"+m.n.identities, m.n.identitiesFilter(), true,
		func(msg jetstream.Msg, meta *jetstream.MsgMetadata) {
			if key, ok := strings.CutPrefix(msg.Subject(), "$KV."+m.n.identities+"."); ok && key == identitiesKey {
				m.takeIdentities(entryOf(key, msg, meta), meta.Sequence.Stream)
			}
		})
}

package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// DefaultInterval is how often a Watcher looks at the file.
const DefaultInterval = 200 * time.Millisecond

// seenEvery is how often, at most, the last uses are written.
const seenEvery = 30 * time.Second

// Options configure a Watcher.
type Options struct {
	// Path is the identity document (Path(stateDir)). Required.
	Path string
	// Interval is how often the file's metadata is looked at; 0 means
	// DefaultInterval.
	Interval time.Duration
	// OnLoad is called with each new directory put in force. Nil means
	// nothing is called.
	OnLoad func(*identity.Directory)
	// OnError is called when the file could not be read or did not load;
	// the last good directory stays in force. The same failure is
	// reported once. Nil means nothing is called.
	OnError func(error)
}

// Watcher keeps a directory in step with the identity document: Run looks
// at the file every Interval and calls OnLoad when it changed; Used
// records last uses, which Run writes beside it. Run, Check, Used and
// Directory may be called from different goroutines; the callbacks are
// called from the one that found the change, one at a time.
type Watcher struct {
	o Options

	// mu serializes looks at the file and guards the fields below.
	mu sync.Mutex
	// stat and sum describe the file at the last look (stat nil when it
	// did not exist); dir is the directory in force.
	stat   os.FileInfo
	sum    [sha256.Size]byte
	dir    *identity.Directory
	failed string

	// seenMu guards seen and flushed.
	seenMu  sync.Mutex
	seen    Seen
	flushed time.Time
}

// NewWatcher loads the document at o.Path and returns a watcher of it and
// the directory in force. A document that does not load is an error: the
// bridge must not start with access it cannot read.
func NewWatcher(o Options) (*Watcher, error) {
	if o.Path == "" {
		return nil, errors.New("watching the identities: Options need the Path")
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	w := &Watcher{o: o, seen: Seen{}}
	// Stat before reading, as look does: a change that lands after the
	// stat is seen by the next look, whatever was read.
	w.stat, _ = os.Stat(o.Path)
	data, err := read(o.Path)
	if err != nil {
		return nil, err
	}
	afterRead()
	doc, err := decode(o.Path, data)
	if err != nil {
		return nil, err
	}
	w.sum = sha256.Sum256(data)
	w.dir = identity.NewDirectory(doc)
	return w, nil
}

// afterRead is called by NewWatcher once it read the document, before
// it decodes it; tests change the file there.
var afterRead = func() {}

// Directory returns the directory in force.
func (w *Watcher) Directory() *identity.Directory {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dir
}

// Run looks at the file every Interval until ctx is done, and writes the
// last uses at most every 30 seconds and when it returns. It returns
// ctx's error.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	defer w.flushSeen(true)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			w.look(false)
			w.flushSeen(false)
		}
	}
}

// Check loads the file now, whatever its metadata says.
func (w *Watcher) Check() error { return w.look(true) }

// look loads the file if it changed (or always, when forced).
func (w *Watcher) look(force bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, statErr := os.Stat(w.o.Path)
	if !force {
		switch {
		case statErr != nil && w.stat == nil && errors.Is(statErr, os.ErrNotExist):
			return nil // still missing
		case statErr == nil && w.stat != nil && os.SameFile(fi, w.stat) && fi.ModTime().Equal(w.stat.ModTime()) && fi.Size() == w.stat.Size():
			return nil
		}
	}
	w.stat = nil
	if statErr == nil {
		w.stat = fi
	}
	data, err := read(w.o.Path)
	if err != nil {
		w.sum = [sha256.Size]byte{}
		return w.fail(err)
	}
	sum := sha256.Sum256(data)
	if sum == w.sum && !force {
		return nil
	}
	doc := &identity.Document{}
	if data != nil {
		if doc, err = identity.Decode(data); err != nil {
			w.sum = [sha256.Size]byte{}
			return w.fail(errors.New("the identities file " + w.o.Path + ": " + err.Error() + "; the identities in force stay those last loaded"))
		}
	}
	w.sum, w.failed = sum, ""
	w.dir = identity.NewDirectory(doc)
	if w.o.OnLoad != nil {
		w.o.OnLoad(w.dir)
	}
	return nil
}

func (w *Watcher) fail(err error) error {
	if err.Error() != w.failed && w.o.OnError != nil {
		w.o.OnError(err)
	}
	w.failed = err.Error()
	return err
}

// Used records that the record key (OperatorKey, ClientKey) was used at
// at. It never blocks on the file: Run writes it.
func (w *Watcher) Used(key string, at time.Time) {
	w.seenMu.Lock()
	defer w.seenMu.Unlock()
	if at.After(w.seen[key]) {
		w.seen[key] = at
	}
}

// flushSeen writes the recorded last uses, at most every seenEvery unless
// final.
func (w *Watcher) flushSeen(final bool) {
	w.seenMu.Lock()
	if len(w.seen) == 0 || (!final && time.Since(w.flushed) < seenEvery) {
		w.seenMu.Unlock()
		return
	}
	updates := w.seen
	w.seen, w.flushed = Seen{}, time.Now()
	w.seenMu.Unlock()
	if err := addSeen(filepath.Dir(w.o.Path), updates, w.Directory().Document()); err != nil && w.o.OnError != nil {
		w.o.OnError(err)
	}
}

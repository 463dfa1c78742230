// Package policyfile keeps a bridge's approval policy in step with its
// file: it loads the file at start (a bridge whose policy does not load
// does not start), and reloads it when the file changes or when asked (on
// SIGHUP). A file that does not load leaves the last good policy in force
// and says why, once per change.
//
// It is the I/O edge of package policy, which stays pure. Watching is by
// polling the file's metadata, so it works the same on every platform and
// file system (network mounts, container volumes, editors that replace
// the file by renaming another onto it) without an inotify dependency.
package policyfile

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// DefaultInterval is how often a Watcher looks at the file when Options
// give no interval.
const DefaultInterval = 2 * time.Second

// Load reads and parses the policy file at path: the start of a bridge
// with --policy. An error says what to fix; the bridge must not start.
func Load(path string) (*policy.Reloader, error) {
	data, _, err := read(path)
	if err != nil {
		return nil, err
	}
	r, err := policy.NewReloader(data)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return r, nil
}

// read reads at most policy.MaxPolicyBytes+1 bytes (Parse refuses more,
// saying how large the file is) and the file's metadata.
func read(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the policy file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the policy file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("reading the policy file: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, policy.MaxPolicyBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the policy file: %w", err)
	}
	return data, fi, nil
}

// Options configure a Watcher.
type Options struct {
	// Path is the policy file.
	Path string
	// Reloader holds the policy in force (from Load).
	Reloader *policy.Reloader
	// Interval is how often the file's metadata is looked at; 0 means
	// DefaultInterval.
	Interval time.Duration
	// OnLoad is called with each new policy put in force (a new
	// revision). Nil means nothing is called.
	OnLoad func(*policy.Policy)
	// OnError is called when the file could not be read or did not load;
	// the last good policy stays in force. A change is reported once: the
	// same bad file is not reported again at every look. Nil means
	// nothing is called.
	OnError func(error)
}

// Watcher reloads a policy file on change (Run) and on demand (Check).
// Run and Check may be called from different goroutines; the callbacks
// are called from the one that found the change, one at a time.
type Watcher struct {
	o Options

	// mu serializes looks at the file and guards the fields below.
	mu sync.Mutex
	// stat is the metadata of the file at the last look; nil when it
	// could not be read.
	stat os.FileInfo
	// sum is the hash of the bytes last handed to the reloader.
	sum [sha256.Size]byte
	// failed is the error last reported, so a file that stays bad is
	// reported once.
	failed string
}

// NewWatcher returns a watcher of o.Path. The policy in force is taken to
// be the file as it is now: make the Reloader with Load just before.
func NewWatcher(o Options) (*Watcher, error) {
	if o.Path == "" || o.Reloader == nil {
		return nil, errors.New("watching the policy file: Options need the Path and the Reloader from Load")
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	w := &Watcher{o: o}
	if data, fi, err := read(o.Path); err == nil {
		w.stat, w.sum = fi, sha256.Sum256(data)
	}
	return w, nil
}

// Run looks at the file every Interval until ctx is done, reloading it
// when its metadata changed. It returns ctx's error.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			w.look(false)
		}
	}
}

// Check reloads the file now, whatever its metadata says: what SIGHUP
// does. It returns why it did not load, or nil; a file that does not load
// is reported to OnError each time Check is called.
func (w *Watcher) Check() error {
	return w.look(true)
}

// look reloads the file if it changed (or always, when forced).
func (w *Watcher) look(force bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !force {
		fi, err := os.Stat(w.o.Path)
		if err == nil && w.stat != nil && os.SameFile(fi, w.stat) && fi.ModTime().Equal(w.stat.ModTime()) && fi.Size() == w.stat.Size() {
			return nil
		}
	}
	data, fi, err := read(w.o.Path)
	w.stat = fi
	if err != nil {
		// Whatever comes back is loaded again, to clear the failure.
		w.sum = [sha256.Size]byte{}
		return w.fail(fmt.Errorf("%w; the policy in force stays %s", err, w.o.Reloader.Policy().Revision()), force)
	}
	sum := sha256.Sum256(data)
	if sum == w.sum && !force {
		return nil
	}
	w.sum = sum
	p, changed, err := w.o.Reloader.Load(data)
	if err != nil {
		return w.fail(fmt.Errorf("policy file %s: %w; the policy in force stays %s", w.o.Path, err, p.Revision()), force)
	}
	w.failed = ""
	if changed && w.o.OnLoad != nil {
		w.o.OnLoad(p)
	}
	return nil
}

func (w *Watcher) fail(err error, force bool) error {
	if (force || err.Error() != w.failed) && w.o.OnError != nil {
		w.o.OnError(err)
	}
	w.failed = err.Error()
	return err
}

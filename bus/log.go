package bus

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Log is a session's durable history: one JSONL file at
// DIR/<agent>/<session>.jsonl, one event per line, each line written with a
// single write(2) on a file opened for appending, so a crash never leaves
// half an event followed by another (AEP-0003 §3.1). Files are created 0600
// in 0700 folders: the history may hold answers.
//
// A Log is safe for concurrent use.
type Log struct {
	path string

	// mu guards f.
	mu sync.Mutex
	f  *os.File
}

// OpenLog creates or opens the log of one session.
func OpenLog(dir, agent, session string) (*Log, error) {
	if !ValidName(agent) || !ValidName(session) {
		return nil, fmt.Errorf("opening session log: agent %q and session %q must be [A-Za-z0-9._-]", agent, session)
	}
	folder := filepath.Join(dir, agent)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return nil, fmt.Errorf("creating log folder %s: %w; pass --log-dir to choose another", folder, err)
	}
	path := filepath.Join(folder, session+".jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening session log %s: %w", path, err)
	}
	return &Log{path: path, f: f}, nil
}

// Path returns the log file's path.
func (l *Log) Path() string { return l.path }

// Write appends one event line.
func (l *Log) Write(_ aep.Event, raw []byte) error {
	line := make([]byte, 0, len(raw)+1)
	line = append(append(line, raw...), '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("writing session log %s: the log is closed", l.path)
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("writing session log %s: %w", l.path, err)
	}
	return nil
}

// Close flushes the file to disk and closes it.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	serr := l.f.Sync()
	cerr := l.f.Close()
	l.f = nil
	if serr != nil {
		return fmt.Errorf("flushing session log %s: %w", l.path, serr)
	}
	return cerr
}

package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// A gap record is what a Log writes where events are missing: an
// agent.health event (AEP-0002 §5) with status "degraded" whose data also
// carries the gap as its log_gap member. Being agent-scoped (AEP-0001
// §5.2) it takes no session and no seq, so it claims no position in the
// session's order; the gap shows in the seq of the events on either side
// (AEP-0001 §7: gaps are legal). Consumers that do not look for log_gap
// read a health report, as the spec defines it.
const gapType = "agent.health"

// gapData is the data of a gap record.
type gapData struct {
	Status string `json:"status"`
	Gap    Gap    `json:"log_gap"`
}

// Gap is what a gap record records: the events the log could not write
// (the disk was full, say) before it could write again.
type Gap struct {
	// Lost is how many events are missing.
	Lost int64 `json:"lost"`
	// FirstSeq and LastSeq are the seq of the first and last missing
	// events that had one.
	FirstSeq *int64 `json:"first_seq,omitempty"`
	LastSeq  *int64 `json:"last_seq,omitempty"`
	// Since and Until are the times of the first and last missing events.
	Since string `json:"since"`
	Until string `json:"until"`
	// Error is why the first one could not be written, as the system
	// said it ("no space left on device").
	Error string `json:"error"`
}

// LogGap returns the gap a gap record records, and false for any other
// event.
func LogGap(ev *aep.Event) (Gap, bool) {
	if ev.Type != gapType {
		return Gap{}, false
	}
	var d gapData
	if json.Unmarshal(ev.Data, &d) != nil || d.Gap.Lost <= 0 {
		return Gap{}, false
	}
	return d.Gap, true
}

// Log is a session's durable history: one JSONL file at
// DIR/<agent>/<session>.jsonl, one event per line, each line written with a
// single write(2) on a file opened for appending (AEP-0003 §3.1). A line is
// written whole or not at all: after a failed or short write the file is
// cut back to its last complete line, so a full disk never leaves half an
// event glued to the next. The events it could not write are counted, and
// the first write that succeeds afterwards is preceded by a gap record.
// Files are created 0600 in 0700 folders: the history may hold answers.
//
// A Log is safe for concurrent use.
type Log struct {
	path string

	// mu guards the fields below.
	mu sync.Mutex
	f  *os.File
	// size is the length of the file's complete lines.
	size int64
	// lost counts the events not written since the last that was; who
	// is the last of them, whose identity a gap record at Close carries.
	lost Gap
	who  aep.Event
	// line is the buffer Write builds a line in, kept between writes
	// while it is at most maxKeptLine bytes.
	line []byte
}

// maxKeptLine bounds the line buffer a Log keeps between writes, so one
// large event does not pin its size for the session.
const maxKeptLine = 64 << 10

// OpenLog creates or opens the log of one session. A file that ends
// inside a line (a crash mid-write) gets its newline first, so the torn
// line stays apart for readers to skip and nothing is glued to it.
func OpenLog(dir, agent, session string) (*Log, error) {
	if !ValidName(agent) || !ValidName(session) {
		return nil, fmt.Errorf("opening session log: agent %q and session %q must be [A-Za-z0-9._-]", agent, session)
	}
	folder := filepath.Join(dir, agent)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return nil, fmt.Errorf("creating log folder %s: %w; pass --log-dir to choose another", folder, err)
	}
	path := filepath.Join(folder, session+".jsonl")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening session log %s: %w", path, err)
	}
	l := &Log{path: path, f: f}
	if err := l.endTornTail(); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening session log %s: %w", path, err)
	}
	return l, nil
}

// endTornTail sets size, ending a torn last line with its newline.
func (l *Log) endTornTail() error {
	st, err := l.f.Stat()
	if err != nil {
		return err
	}
	l.size = st.Size()
	if l.size == 0 {
		return nil
	}
	last := make([]byte, 1)
	if _, err := l.f.ReadAt(last, l.size-1); err != nil {
		return err
	}
	if last[0] != '\n' {
		return l.writeLine([]byte{'\n'})
	}
	return nil
}

// Path returns the log file's path.
func (l *Log) Path() string { return l.path }

// Write appends one event line, after the gap record of the events that
// could not be written before it, if any. When it cannot write the line,
// the event is counted in the next gap record.
func (l *Log) Write(ev aep.Event, raw []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := append(append(l.line[:0], raw...), '\n')
	if cap(line) <= maxKeptLine {
		l.line = line
	}
	if l.f == nil {
		return fmt.Errorf("writing session log %s: the log is closed", l.path)
	}
	if err := l.writeGap(ev); err != nil {
		l.count(ev, err)
		return fmt.Errorf("writing session log %s: %w; %d event(s) not written yet", l.path, err, l.lost.Lost)
	}
	if err := l.writeLine(line); err != nil {
		l.count(ev, err)
		return fmt.Errorf("writing session log %s: %w; %d event(s) not written yet, the log records the gap when it can write again", l.path, err, l.lost.Lost)
	}
	return nil
}

// writeGap writes the gap record of the events counted as lost, taking
// its source and agent from ev, the event that follows it.
func (l *Log) writeGap(ev aep.Event) error {
	if l.lost.Lost == 0 {
		return nil
	}
	data, _ := json.Marshal(gapData{Status: "degraded", Gap: l.lost})
	g := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: gapType, Time: aep.FormatTime(time.Now()),
		Source: ev.Source, Agent: ev.Agent, Severity: aep.SeverityWarning,
		Capture: aep.CaptureMetadata, Data: data}
	raw, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if err := l.writeLine(append(raw, '\n')); err != nil {
		return err
	}
	l.lost = Gap{}
	return nil
}

// count adds ev to the events not written.
func (l *Log) count(ev aep.Event, err error) {
	g := &l.lost
	if g.Lost == 0 {
		g.Since, g.Error = ev.Time, err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			g.Error = pe.Err.Error() // the system's reason, without the path
		}
	}
	g.Lost++
	g.Until = ev.Time
	l.who = aep.Event{Source: ev.Source, Agent: ev.Agent}
	if ev.Seq != nil {
		s := *ev.Seq
		if g.FirstSeq == nil {
			g.FirstSeq = &s
		}
		g.LastSeq = &s
	}
}

// writeLine appends one whole line, or nothing: a failed or short write is
// cut back to the last complete line.
func (l *Log) writeLine(line []byte) error {
	n, err := l.f.Write(line)
	if err == nil && n == len(line) {
		l.size += int64(n)
		return nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	if n > 0 {
		if terr := l.f.Truncate(l.size); terr != nil {
			return errors.Join(err, fmt.Errorf("cutting the half-written line back: %w", terr))
		}
	}
	return err
}

// Lost returns how many events the log has not been able to write since
// the last one it wrote.
func (l *Log) Lost() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost.Lost
}

// Close records a gap still open (when it can), flushes the file to disk
// and closes it.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	var gerr error
	if l.lost.Lost > 0 {
		n := l.lost.Lost
		if err := l.writeGap(l.who); err != nil {
			gerr = fmt.Errorf("session log %s: %d event(s) were never written, and the gap record could not be written either: %w", l.path, n, err)
		}
	}
	serr := l.f.Sync()
	cerr := l.f.Close()
	l.f = nil
	if serr != nil {
		serr = fmt.Errorf("flushing session log %s: %w", l.path, serr)
	}
	return errors.Join(gerr, serr, cerr)
}

package bus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// MaxLogLine bounds one line ReadLog reads; a longer line is skipped.
const MaxLogLine = 64 << 20

// Skipped is a line of a log that ReadLog skipped.
type Skipped struct {
	// Name is the log's name (its path), Line the line's number from 1.
	Name string
	Line int
	// Torn is true for a last line the log ends inside: what a crash
	// mid-write leaves.
	Torn bool
	// Err says what was wrong with it.
	Err error
}

func (s Skipped) String() string {
	if s.Torn {
		return fmt.Sprintf("%s:%d: skipped a torn last line (the log ends inside it, as a crash mid-write leaves it): %v", s.Name, s.Line, s.Err)
	}
	return fmt.Sprintf("%s:%d: skipped a line that is not an AEP event: %v", s.Name, s.Line, s.Err)
}

// ReadLog reads a JSONL session log, calling event with each event and
// its line number, in order, and skip with each line that is not a valid
// event (a torn last line, say); reading goes on after it. Empty lines are
// passed over. A gap record is an event like any other (LogGap reads it,
// GapString says what it records). ReadLog fails only when reading r fails.
func ReadLog(r io.Reader, name string, event func(ev *aep.Event, line int), skip func(Skipped)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		line, complete, err := readLogLine(br, buf[:0])
		buf = line
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errLongLine) {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		switch trimmed := bytes.TrimSpace(line); {
		case errors.Is(err, errLongLine):
			skip(Skipped{Name: name, Line: n, Err: err})
		case len(trimmed) == 0:
		default:
			if ev, perr := aep.Parse(trimmed); perr != nil {
				skip(Skipped{Name: name, Line: n, Torn: !complete, Err: perr})
			} else {
				event(ev, n)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

var errLongLine = fmt.Errorf("the line is over %d bytes", MaxLogLine)

// readLogLine reads one line into buf, without its newline, and says
// whether the newline ended it; a line over MaxLogLine is read to its end
// and returned empty, with errLongLine.
func readLogLine(br *bufio.Reader, buf []byte) ([]byte, bool, error) {
	long := false
	for {
		frag, err := br.ReadSlice('\n')
		if !long && len(buf)+len(frag) > MaxLogLine {
			long, buf = true, buf[:0]
		}
		if !long {
			buf = append(buf, frag...)
		}
		switch {
		case err == nil:
			if long {
				return nil, true, errLongLine
			}
			return buf[:len(buf)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case long && errors.Is(err, io.EOF):
			return nil, false, errLongLine
		default:
			return buf, false, err
		}
	}
}

// GapString says what a Gap record records, for a reader's warning, or ""
// for an event that is not one.
func GapString(ev *aep.Event) string {
	g, ok := LogGap(ev)
	if !ok {
		return ""
	}
	seqs := ""
	if g.FirstSeq != nil && g.LastSeq != nil {
		seqs = fmt.Sprintf(" (seq %d to %d)", *g.FirstSeq, *g.LastSeq)
	}
	return fmt.Sprintf("%d event(s)%s from %s to %s are missing: the log could not write them (%s)", g.Lost, seqs, g.Since, g.Until, g.Error)
}

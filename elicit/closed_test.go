package elicit

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// logRecorder is a slog.Handler that keeps each record's level and
// message.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// closedErrConn reads like a file or socket that is closed under its
// reader: once closed, Read fails with err.
type closedErrConn struct {
	*memConn
	err error
}

func (c *closedErrConn) Read(context.Context) (Frame, error) {
	select {
	case b := <-c.in:
		return Frame{Head: b}, nil
	case <-c.closed:
		return Frame{}, c.err
	}
}

// TestReadingAClosedStreamIsNoFailure: Close closes the streams under
// their readers, which then fail with os.ErrClosed or net.ErrClosed; that
// is the end of the session, not a failure to report.
func TestReadingAClosedStreamIsNoFailure(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"file", &fs.PathError{Op: "read", Path: "|0", Err: os.ErrClosed}},
		{"socket", &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &logRecorder{}
			cl, sv := &closedErrConn{newMemConn(), tt.err}, &closedErrConn{newMemConn(), tt.err}
			mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
			defer mgr.Close()
			p := New(Options{Client: cl, Server: sv, Manager: mgr, Logger: slog.New(h)})
			ctx, cancel := context.WithCancel(context.Background())
			ended := make(chan Ending, 1)
			go func() { ended <- p.Run(ctx) }()
			cancel()
			<-ended
			if err := p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, r := range h.records {
				if r.Level > slog.LevelDebug {
					t.Errorf("closing the streams logged %s %q; want nothing above debug", r.Level, r.Message)
				}
			}
		})
	}
	if !errors.Is(tests[0].err, os.ErrClosed) || !errors.Is(tests[1].err, net.ErrClosed) {
		t.Fatal("the test's errors do not wrap the closed-stream errors")
	}
}

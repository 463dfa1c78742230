package bridge

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// pipeConn is a client stream that records its Close.
type pipeConn struct{ closed chan struct{} }

func (c *pipeConn) ReadMessage() ([]byte, error) { <-c.closed; return nil, io.EOF }
func (c *pipeConn) WriteMessage([]byte) error    { return nil }
func (c *pipeConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

// TestAnUpstreamThatFailsToStartReleasesTheSession: when the server
// cannot be started, Run returns its error and releases all the session
// holds: the host no longer routes to it, its manager and intake are
// closed, and the client's stream is closed, as Run promises.
func TestAnUpstreamThatFailsToStartReleasesTheSession(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, HostOptions{Agent: "a"})
	dir := t.TempDir()
	client := &pipeConn{closed: make(chan struct{})}
	b, err := h.NewSession(Options{Command: []string{filepath.Join(dir, "no-such-server")}, LogDir: dir, ClientConn: client})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	if err := b.Run(context.Background()); err == nil {
		t.Fatal("Run with a missing server returned nil; want its start error")
	}
	if h.session(b.Session()) != nil {
		t.Error("the host still routes commands to a session whose server never started")
	}
	if _, err := b.Manager().Raise(attention.Spec{Message: "m", Deliver: func(attention.Resolution) {}}); err == nil {
		t.Error("the session's attention manager still raises questions")
	}
	select {
	case <-client.closed:
	default:
		t.Error("the client's stream was left open")
	}
	if got := b.Upstream(); got == "starting" {
		t.Errorf("upstream state %q; want it to say the start failed", got)
	}
}

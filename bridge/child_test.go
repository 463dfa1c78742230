package bridge

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestStopEscalatesToSIGKILL(t *testing.T) {
	// A server that ignores both the closed stdin and SIGTERM.
	ready := make(chan struct{})
	pr, pw := io.Pipe()
	c, err := startChild([]string{"sh", "-c", `trap "" TERM; echo ready >&2; while :; do sleep 1; done`}, nil, pw)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 16)
		n, _ := pr.Read(buf)
		if strings.Contains(string(buf[:n]), "ready") {
			close(ready)
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-ready:
	case <-time.After(waitLimit):
		t.Fatal("child did not start")
	}
	c.stop(50*time.Millisecond, 50*time.Millisecond)
	if st := c.exitStatus(time.Second); st != "signal killed" {
		t.Fatalf("exit status %q; want signal killed", st)
	}
	pw.Close()
}

func TestStopEndsAPoliteServerWithStdin(t *testing.T) {
	c, err := startChild([]string{"cat"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c.stop(waitLimit, waitLimit) // cat exits when its stdin closes
	if st := c.exitStatus(time.Second); st != "status 0" {
		t.Fatalf("exit status %q; want status 0", st)
	}
}

func TestStartErrorSaysWhatToDo(t *testing.T) {
	_, err := startChild([]string{"/no/such/server"}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "check the command after --") {
		t.Fatalf("got %v", err)
	}
	_, err = startChild(nil, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "pass it after --") {
		t.Fatalf("got %v", err)
	}
}

func TestClientLeavingDismissesPendingQuestions(t *testing.T) {
	s := startSession(t, sessionConfig{})
	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	if err := s.close(); err != nil {
		t.Fatalf("Run after the client left: %v", err)
	}
	rep := s.checkLog()
	n := len(rep.Lines)
	last, prev := rep.Lines[n-1], rep.Lines[n-2]
	if prev.Type != "attention.resolved" || prev.Subject != req.ID || !strings.Contains(string(prev.Data), "dismissed") || last.Type != "session.ended" {
		t.Fatalf("log ends with %s %s / %s; want the question dismissed, then session.ended", prev.Type, prev.Data, last.Type)
	}
}

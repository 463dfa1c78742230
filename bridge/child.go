package bridge

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is the spawned upstream server.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // read end of the server's stdout
	done   chan struct{}

	// mu guards status.
	mu     sync.Mutex
	status string
}

// startChild starts argv with its stdio connected to pipes and its stderr
// to stderr, in its own process group so the whole tree can be signalled
// (npx, shells and wrappers spawn grandchildren).
func startChild(argv []string, env []string, stderr io.Writer) (*child, error) {
	if len(argv) == 0 {
		return nil, errors.New("no upstream server command: pass it after --, e.g. aep-mcp-bridge -- npx -y @modelcontextprotocol/server-everything")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("creating the upstream's stdin: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the upstream's stdout: %w", err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("starting the upstream server %q: %w; check the command after --", strings.Join(argv, " "), err)
	}
	w.Close()
	c := &child{cmd: cmd, stdin: in, stdout: r, done: make(chan struct{})}
	go c.wait()
	return c, nil
}

func (c *child) wait() {
	err := c.cmd.Wait()
	st := "status 0"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			st = "signal " + ws.Signal().String()
		} else {
			st = fmt.Sprintf("status %d", ee.ExitCode())
		}
	} else if err != nil {
		st = err.Error()
	}
	c.mu.Lock()
	c.status = st
	c.mu.Unlock()
	close(c.done)
}

// exitStatus waits up to d for the process to exit and describes how.
func (c *child) exitStatus(d time.Duration) string {
	select {
	case <-c.done:
	case <-time.After(d):
		return "no exit status yet (it closed its stdout but is still running)"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// stop closes the server's stdin, then sends SIGTERM after grace, then
// SIGKILL after kill, to the whole process group.
func (c *child) stop(grace, kill time.Duration) {
	c.stdin.Close()
	select {
	case <-c.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
		return
	case <-time.After(kill):
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

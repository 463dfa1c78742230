package upstream

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/scrub"
)

// Process is a spawned stdio MCP server (the upstream of `aep-mcp-bridge --
// COMMAND`). Its stdin and stdout carry the session; its stderr goes where
// Start was told. It is safe for concurrent use.
type Process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // read end of the server's stdout
	done   chan struct{}

	// mu guards status.
	mu     sync.Mutex
	status string
}

// Start starts argv with its stdio connected to pipes and its stderr to
// stderr, in its own process group so the whole tree can be signalled (npx,
// shells and wrappers spawn grandchildren). env nil means this process's
// environment; either way, without the bridge's credentials and the
// variables it read a secret from (scrub.ChildEnv): a server gets its
// questions' answers, never a token.
func Start(argv []string, env []string, stderr io.Writer) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("no upstream server command: pass it after --, e.g. aep-mcp-bridge -- npx -y @modelcontextprotocol/server-everything")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = scrub.ChildEnv(env)
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
		return nil, fmt.Errorf("starting the upstream server %q: %w; check the command after --", argv[0], err)
	}
	w.Close()
	c := &Process{cmd: cmd, stdin: in, stdout: r, done: make(chan struct{})}
	go c.wait()
	return c, nil
}

// Stdin is the server's standard input: the bridge writes client messages
// to it.
func (c *Process) Stdin() io.WriteCloser { return c.stdin }

// Stdout is the server's standard output: the bridge reads server messages
// from it.
func (c *Process) Stdout() io.ReadCloser { return c.stdout }

// Pid returns the server's process id.
func (c *Process) Pid() int { return c.cmd.Process.Pid }

// Done is closed when the server has exited.
func (c *Process) Done() <-chan struct{} { return c.done }

// wait reaps the process and records how it ended; it is the goroutine
// Start spawns, and ends with the process.
func (c *Process) wait() {
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

// ExitStatus waits up to d for the process to exit and describes how
// ("status 1", "signal killed").
func (c *Process) ExitStatus(d time.Duration) string {
	select {
	case <-c.done:
	case <-time.After(d):
		return "no exit status yet (it closed its stdout but is still running)"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Stop closes the server's stdin, then sends SIGTERM after grace, then
// SIGKILL after kill, to the whole process group, and returns once the
// server has exited.
func (c *Process) Stop(grace, kill time.Duration) {
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

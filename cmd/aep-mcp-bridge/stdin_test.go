package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestStdinFlagsUnchanged runs the bridge binary with stdin on a real
// pipe, a pseudo-terminal and a socket, blocking and non-blocking, and
// checks that stdin's file status flags (which its open file description
// shares with every other reader, and for a socket often with stdout) are
// those it found while it runs and after it exits.
func TestStdinFlagsUnchanged(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		open     func(t *testing.T) (stdin, peer int)
		nonblock bool
	}{
		{name: "pipe", open: openPipe},
		{name: "pipe already non-blocking", open: openPipe, nonblock: true},
		{name: "pty", open: openPTY},
		{name: "socket", open: openSocket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdin, peer := tt.open(t)
			if tt.nonblock {
				if err := syscall.SetNonblock(stdin, true); err != nil {
					t.Fatal(err)
				}
			}
			before := getfl(t, stdin)
			stderr := &lockedBuffer{}
			cmd := exec.Command(self, "as-bridge", "--listen", "off", "--log-dir", "off", "--log-level", "info", "--", self, "demo-server")
			// Held until the end: the finalizer of an unreferenced
			// *os.File would close the descriptor under the test.
			in := os.NewFile(uintptr(stdin), "stdin")
			defer in.Close()
			cmd.Stdin = in
			cmd.Stdout, cmd.Stderr = nil, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			stderr.waitFor(t, "upstream started")
			if got := getfl(t, stdin); got != before {
				t.Errorf("while the bridge runs, stdin's flags are %#x; want %#x as found", got, before)
			}
			syscall.Close(peer) // the client goes away: EOF (pipe) or a hang-up (pty)
			if err := <-done; err != nil {
				t.Logf("the bridge exited with %v; stderr:\n%s", err, stderr.String())
			}
			if got := getfl(t, stdin); got != before {
				t.Errorf("after the bridge exits, stdin's flags are %#x; want %#x as found (O_NONBLOCK is %#x)", got, before, syscall.O_NONBLOCK)
			}
		})
	}
}

func getfl(t *testing.T, fd int) int {
	t.Helper()
	fl, err := fcntl(fd, syscall.F_GETFL, 0)
	if err != nil {
		t.Fatalf("F_GETFL: %v", err)
	}
	return fl
}

// openPipe returns a blocking pipe: its read end and its write end.
func openPipe(t *testing.T) (int, int) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	return p[0], p[1]
}

// openSocket returns a connected Unix socket pair: stdin's end and the
// client's. A socket cannot be opened again through /proc, so the bridge
// sets O_NONBLOCK on stdin's own description and must put it back.
func openSocket(t *testing.T) (int, int) {
	t.Helper()
	p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p[0], p[1]
}

// openPTY returns a pseudo-terminal: its terminal end and its master.
func openPTY(t *testing.T) (int, int) {
	t.Helper()
	master, err := syscall.Open("/dev/ptmx", syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		testenv.Missing(t, "a pseudo-terminal (/dev/ptmx)", "mount devpts")
	}
	var unlock int32
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("naming the pty: %v", err)
	}
	tty, err := syscall.Open(fmt.Sprintf("/dev/pts/%d", n), syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	return tty, master
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// TestStopsWhileStdinStaysOpen: a bridge whose client keeps stdin open
// and sends nothing is waiting in its stdin reader when SIGINT comes; it
// still shuts down and exits, for each kind of stdin it reads its own
// way (a pipe or terminal through a descriptor of its own, a socket
// through stdin's).
func TestStopsWhileStdinStaysOpen(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		open func(t *testing.T) (stdin, peer int)
	}{{"pipe", openPipe}, {"pty", openPTY}, {"socket", openSocket}} {
		t.Run(tt.name, func(t *testing.T) {
			stdin, peer := tt.open(t)
			in := os.NewFile(uintptr(stdin), "stdin")
			defer in.Close()
			defer syscall.Close(peer)
			stderr := &lockedBuffer{}
			cmd := exec.Command(self, "as-bridge", "--listen", "off", "--log-dir", "off", "--log-level", "info", "--", self, "demo-server")
			cmd.Stdin, cmd.Stderr = in, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			stderr.waitFor(t, "upstream started")
			cmd.Process.Signal(os.Interrupt)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the bridge exited with %v after SIGINT; want status 0; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("the bridge did not exit within 20 s of SIGINT while its stdin stayed open; stderr:\n%s", stderr.String())
			}
		})
	}
}

package main

import (
	"io"
	"os"
	"syscall"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/waitread"
)

// clientStdin returns what the bridge reads its MCP client from, and a
// function to call on the way out. For the process's own stdin the reader
// is one that closing unblocks (the proxy closes it at shutdown), and
// stdin's file status flags are left as they were found: they belong to
// the open file description, which the terminal or pipe shares with every
// other reader (a shell, the next command of a pipeline).
//
//   - A pipe or a terminal is opened again through /proc/self/fd/0: a new
//     open file description of the same pipe or terminal, made
//     non-blocking for the reader (waitReader), while stdin's own stays
//     untouched.
//   - A socket is read with MSG_DONTWAIT, its flags untouched: stdout is
//     often the same socket (socat, inetd), and a non-blocking stdout
//     that Go does not poll fails its writes with EAGAIN.
//   - A regular file never blocks a read, so it is read as it is.
//   - Anything else (a system without /proc or without the socket
//     reader) is made non-blocking, and the returned function restores
//     its flags; the caller defers it, and SIGINT, SIGTERM and SIGHUP
//     reach it through the shutdown order. Only SIGKILL leaves the flag
//     behind.
func clientStdin(r io.Reader) (io.Reader, func()) {
	if r != io.Reader(os.Stdin) {
		return r, func() {}
	}
	// Not os.Stdin.Fd(): it would itself clear O_NONBLOCK on the shared
	// description if a parent had set it.
	const fd = 0
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err == nil {
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			return os.Stdin, func() {}
		case syscall.S_IFIFO, syscall.S_IFCHR:
			// O_NONBLOCK on open: a pipe's read end must not wait for a
			// writer to open it.
			if fd, err := syscall.Open("/proc/self/fd/0", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
				return waitReader(fd), func() {}
			}
		case syscall.S_IFSOCK:
			if r, err := waitread.NewSocket(fd, "/dev/stdin"); err == nil {
				return r, func() {}
			}
		}
	}
	flags, err := fcntl(fd, syscall.F_GETFL, 0)
	if err != nil {
		return os.Stdin, func() {}
	}
	// The proxy closes the reader, and with it descriptor 0, before the
	// caller's deferred restore runs: the flags are put back through a
	// duplicate, which shares the open file description and stays open
	// until then.
	keep, err := fcntl(fd, syscall.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return os.Stdin, func() {}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(keep)
		return os.Stdin, func() {}
	}
	return waitReader(fd), func() {
		fcntl(keep, syscall.F_SETFL, flags)
		syscall.Close(keep)
	}
}

// waitReader reads fd, a non-blocking descriptor of stdin the caller
// owns, on the reading goroutine's thread (internal/waitread): each
// message the client sends then costs the bridge a poll(2) and a
// read(2), where Go's poller adds a read that finds nothing, an
// epoll_wait and a wake-up of the reader. While the client's requests
// overlap, the session has it wait in Go's poller instead (ShareWaits).
// Where that is not supported it is read as an *os.File, through the
// poller. Either way closing the reader ends a Read that waits, and
// closes fd.
func waitReader(fd int) io.ReadCloser {
	if r, err := waitread.New(fd, "/dev/stdin"); err == nil {
		return r
	}
	return os.NewFile(uintptr(fd), "/dev/stdin")
}

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Package waitread reads a pipe, terminal or socket on the goroutine that
// asks, its thread waiting for input in poll(2), instead of through Go's
// network poller.
//
// A relay that reads one message, forwards it and waits for the next pays
// the poller on every message: the read that finds nothing, the park, an
// epoll_wait on some thread, the wake-up of the goroutine, the read again.
// A thread that waits in poll(2) returns with the input and reads it: two
// system calls, no other thread woken. A plain blocking read(2) would be
// one, but nothing could end it: closing a descriptor does not wake a
// thread blocked reading it. Here Close wakes a waiting Read through an
// eventfd, and Read then reports os.ErrClosed, as an *os.File does.
//
// Each Reader waiting for input holds its goroutine's thread of the
// process, so it is for a few long-lived streams (the bridge's stdin),
// not for one per connection.
package waitread

import (
	"encoding/binary"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Supported says New can work here.
const Supported = true

// Reader reads one descriptor. One Read at a time; Close may be called
// from any goroutine, at any time, more than once.
type Reader struct {
	fd, wake int
	name     string
	closed   atomic.Bool
	// use is held by Read across its system calls and by Close while it
	// releases the descriptors, so a descriptor is never closed (and its
	// number reused) under a Read.
	use sync.Mutex
	// full says the last read filled its buffer: more input is likely
	// there already, so the next Read tries to read before it waits.
	full bool
	// sock says fd is a socket, read with MSG_DONTWAIT (NewSocket).
	sock bool
	// released is closed once Close has closed the descriptors.
	released chan struct{}
}

// New returns a Reader that owns fd: it sets O_NONBLOCK on fd's open
// file description, and Close closes fd. name is the file's name in
// errors. On error fd is left as it was, and still the caller's.
func New(fd int, name string) (*Reader, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, &os.PathError{Op: "eventfd", Path: name, Err: err}
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(wake)
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return &Reader{fd: fd, wake: wake, name: name, released: make(chan struct{})}, nil
}

// NewSocket is New for a connected stream socket, which it reads with
// MSG_DONTWAIT: it leaves the socket's file status flags as they are, so
// another descriptor of the same open file description (a process's
// stdout on the socket its stdin is) keeps blocking writes.
func NewSocket(fd int, name string) (*Reader, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, &os.PathError{Op: "eventfd", Path: name, Err: err}
	}
	return &Reader{fd: fd, wake: wake, name: name, sock: true, released: make(chan struct{})}, nil
}

// Read reads up to len(p) bytes, waiting until there is input, the end of
// the stream (io.EOF) or Close (an error that is os.ErrClosed).
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.use.Lock()
	defer r.use.Unlock()
	fds := [2]unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake), Events: unix.POLLIN}}
	wait := !r.full
	for {
		if r.closed.Load() {
			return 0, r.err("read", os.ErrClosed)
		}
		if wait {
			// Until there is something to read: the stream's input, its
			// end or error (POLLHUP, POLLERR), or Close's wake-up.
			if _, err := unix.Poll(fds[:], -1); err != nil && err != unix.EINTR {
				return 0, r.err("poll", err)
			}
			if r.closed.Load() {
				return 0, r.err("read", os.ErrClosed)
			}
		}
		n, err := r.read(p)
		switch {
		case n > 0:
			r.full = n == len(p)
			return n, nil
		case err == nil:
			return 0, io.EOF
		case err == unix.EAGAIN || err == unix.EINTR:
			// Nothing yet (another reader of the same pipe may have taken
			// what poll saw): wait again.
			wait = true
		default:
			return 0, r.err("read", err)
		}
	}
}

// read reads once without waiting.
func (r *Reader) read(p []byte) (int, error) {
	if r.sock {
		n, _, err := unix.Recvfrom(r.fd, p, unix.MSG_DONTWAIT)
		return n, err
	}
	return unix.Read(r.fd, p)
}

// Close ends the Reader: a Read waiting for input returns os.ErrClosed,
// and the descriptor is closed once no Read is inside a system call.
// Every Close returns once the descriptor is closed; the first reports
// how closing it went.
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		<-r.released
		return nil
	}
	defer close(r.released)
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(r.wake, one[:])
	r.use.Lock()
	defer r.use.Unlock()
	err := unix.Close(r.fd)
	unix.Close(r.wake)
	if err != nil {
		return r.err("close", err)
	}
	return nil
}

func (r *Reader) err(op string, err error) error {
	return &os.PathError{Op: op, Path: r.name, Err: err}
}

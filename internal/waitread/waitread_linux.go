// Package waitread reads a pipe, terminal or socket on the goroutine that
// asks, its thread waiting for input in poll(2), or, while the caller
// says so, through Go's network poller.
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
// That wins while one stream at a time has something to do: a client
// waiting for each answer before it asks again. While requests overlap,
// both of the bridge's streams have input in the same moments, and one
// epoll_wait that returns both costs less than two threads woken in two
// poll(2)s: a pipe's Reader then waits in Go's poller, when the caller
// says so (ShareWaits).
//
// Each Reader waiting for input in poll(2) holds its goroutine's thread
// of the process, so it is for a few long-lived streams (the bridge's
// stdin), not for one per connection.
package waitread

import (
	"encoding/binary"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

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
	// share, once ShareWaits set it and while it says so, has a pipe's
	// Read wait in Go's poller instead of poll(2), through polled: a
	// duplicate of fd that the poller watches, made for the first such
	// wait and closed again before the next poll(2). It is not kept: the
	// poller would wake a thread for every input that poll(2) waits for.
	share      atomic.Pointer[func() bool]
	pmu        sync.Mutex // guards polled against Close
	polled     *os.File
	unpollable atomic.Bool // the poller refused the descriptor
	// released is closed once Close has closed the descriptors.
	released chan struct{}
	// waiting, when set (by tests), is called as a Read starts to wait:
	// inPoller says Go's poller waits, not poll(2).
	waiting func(inPoller bool)
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
// stdout on the socket its stdin is) keeps blocking writes. Without
// O_NONBLOCK, Go's poller cannot wait for it: ShareWaits does nothing.
func NewSocket(fd int, name string) (*Reader, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, &os.PathError{Op: "eventfd", Path: name, Err: err}
	}
	return &Reader{fd: fd, wake: wake, name: name, sock: true, released: make(chan struct{})}, nil
}

// ShareWaits has a Read that must wait for input wait in Go's poller
// while busy reports true, and in poll(2) on its own thread otherwise.
// busy is called before each such wait, on the reading goroutine, while
// Close waits for the Read: it must be quick and must not wait for
// anything Close's caller may hold. It should say whether the process's
// other streams are likely to have input in the same moments (a relay
// whose requests overlap). It applies to a pipe or terminal (New) that
// the poller can wait for.
func (r *Reader) ShareWaits(busy func() bool) {
	r.share.Store(&busy)
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
			if f := r.pollerFile(); f != nil {
				return r.readPolled(f, p)
			}
			if r.waiting != nil {
				r.waiting(false)
			}
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

// pollerFile returns the file through which Go's poller waits for the
// next input, or nil when poll(2) waits: a socket, a descriptor the
// poller cannot watch, or busy saying no (which closes the file).
func (r *Reader) pollerFile() *os.File {
	busy := r.share.Load()
	if r.sock || busy == nil || r.unpollable.Load() {
		return nil
	}
	shared := (*busy)()
	r.pmu.Lock()
	defer r.pmu.Unlock()
	switch {
	case r.closed.Load():
		// Close has closed any file already: a new one would hold the
		// Read in the poller while Close waits for it.
		return nil
	case !shared:
		if r.polled != nil {
			r.polled.Close()
			r.polled = nil
		}
		return nil
	case r.polled != nil:
		return r.polled
	}
	// At 3 or above, as any descriptor the process makes: never one of
	// the standard three, even when one of them is closed.
	d, err := unix.FcntlInt(uintptr(r.fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil // out of descriptors, say: poll(2) waits this time
	}
	f := os.NewFile(uintptr(d), r.name)
	// A deadline is refused exactly when the poller does not watch f.
	if f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		r.unpollable.Store(true)
		return nil
	}
	r.polled = f
	return f
}

// readPolled reads through f, Go's poller waiting until there is input;
// Close ends the wait by closing f.
func (r *Reader) readPolled(f *os.File, p []byte) (int, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, r.err("read", err)
	}
	var n int
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		for {
			n, rerr = unix.Read(int(fd), p)
			if rerr != unix.EINTR {
				break
			}
		}
		if rerr != unix.EAGAIN {
			return true
		}
		if r.waiting != nil {
			r.waiting(true)
		}
		return false
	})
	switch {
	case err != nil && r.closed.Load():
		return 0, r.err("read", os.ErrClosed)
	case err != nil:
		return 0, r.err("read", err)
	case n > 0:
		r.full = n == len(p)
		return n, nil
	case rerr == nil:
		return 0, io.EOF
	default:
		return 0, r.err("read", rerr)
	}
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
	// A Read that Go's poller holds returns once its file is closed, and
	// the file's Close waits for it to leave.
	r.pmu.Lock()
	if r.polled != nil {
		r.polled.Close()
		r.polled = nil
	}
	r.pmu.Unlock()
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

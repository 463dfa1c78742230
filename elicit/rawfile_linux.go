package elicit

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// rawFile reads or writes a non-blocking *os.File of Go's poller without
// telling the scheduler that a system call starts: a read or write of a
// non-blocking descriptor returns at once, and waiting for one is the
// poller's (RawConn). A stdio hop makes a read and a write per message,
// after an idle spell in which the runtime's monitor thread went to
// sleep; the first system call that announces itself wakes that thread,
// once per message and direction, on the message's path. Calls made this
// way skip that wake and the scheduler's bookkeeping around the call.
type rawFile struct {
	rc syscall.RawConn
	f  *os.File
}

// newRawFile returns a rawFile of v when v is an *os.File whose
// descriptor is non-blocking and in Go's poller, or nil. A standard
// descriptor (0, 1, 2) is left as it is: its open file description may
// be shared with other processes, and one that made it blocking would
// block a raw call on a thread the scheduler believes runs Go code. The
// bridge's own pipes to the server and its reopened stdin are its alone.
func newRawFile(v any) *rawFile {
	f, ok := v.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblock := false
	rc.Control(func(fd uintptr) {
		flags, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = fd > 2 && e == 0 && flags&syscall.O_NONBLOCK != 0
	})
	// A non-blocking descriptor outside the poller (a file) cannot be
	// waited for: SetReadDeadline fails for it alone.
	if !nonblock || f.SetReadDeadline(time.Time{}) != nil {
		return nil
	}
	return &rawFile{rc: rc, f: f}
}

func (r *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			n, errno = int(m), e
			return e != syscall.EAGAIN
		}
	})
	switch {
	case err != nil:
		return 0, r.pollErr("read", err)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawFile) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until the peer reads
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, r.pollErr("write", err)
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
	}
	return n, nil
}

// pollErr words an error of the poller as the file's own Read or Write
// does: one of a closed file wraps os.ErrClosed.
func (r *rawFile) pollErr(op string, err error) error {
	if _, serr := r.f.Stat(); errors.Is(serr, os.ErrClosed) {
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: r.f.Name(), Err: err}
}

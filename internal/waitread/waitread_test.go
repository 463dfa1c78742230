//go:build linux

package waitread

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// newPipe returns a Reader of a new pipe's read end and the descriptor
// of its write end; the caller closes both.
func newPipe(t *testing.T) (*Reader, int) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, err := New(p[0], "test pipe")
	if err != nil {
		t.Fatal(err)
	}
	return r, p[1]
}

// pipe is newPipe with the write end as a file, both closed when the
// test ends.
func pipe(t *testing.T) (*Reader, *os.File) {
	t.Helper()
	r, wfd := newPipe(t)
	w := os.NewFile(uintptr(wfd), "test pipe writer")
	t.Cleanup(func() {
		// On its own goroutine: a Close that cannot end a Read fails the
		// test instead of hanging it.
		done := make(chan struct{})
		go func() { r.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Close did not return within 10 s")
		}
		w.Close()
	})
	return r, w
}

// result is what one Read returned.
type result struct {
	s   string
	err error
}

// start runs one Read of up to n bytes on another goroutine; its result
// comes on the channel.
func start(r *Reader, n int) <-chan result {
	c := make(chan result, 1)
	go func() {
		b := make([]byte, n)
		k, err := r.Read(b)
		c <- result{string(b[:k]), err}
	}()
	return c
}

// await returns the result of a Read start began, failing the test with
// what when it does not come within 10 s.
func await(t *testing.T, c <-chan result, what string) result {
	t.Helper()
	select {
	case res := <-c:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal(what + " within 10 s")
		return result{}
	}
}

// read reads once on another goroutine and returns what it got, failing
// the test when nothing comes back within 10 s.
func read(t *testing.T, r *Reader, n int) (string, error) {
	t.Helper()
	res := await(t, start(r, n), "Read did not return")
	return res.s, res.err
}

// TestReadsWhatIsWrittenThenEOF: a Read waits for input and returns it,
// in pieces as large as the caller's buffer, then io.EOF once the writer
// is gone.
func TestReadsWhatIsWrittenThenEOF(t *testing.T) {
	r, w := pipe(t)
	c := start(r, 64)
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if res := await(t, c, "a waiting Read did not return the input"); res.s != "hello\n" || res.err != nil {
		t.Fatalf("read %q, %v; want %q, nil", res.s, res.err, "hello\n")
	}
	if _, err := w.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0123", "4567", "89"} {
		if s, err := read(t, r, 4); s != want || err != nil {
			t.Fatalf("read %q, %v; want %q, nil", s, err, want)
		}
	}
	w.Close()
	if s, err := read(t, r, 4); s != "" || err != io.EOF {
		t.Fatalf("after the writer closed, read %q, %v; want io.EOF", s, err)
	}
}

// TestCloseEndsAWaitingRead: Close ends a Read that waits for input, and
// every later one, with os.ErrClosed, and closes the descriptor. Run many
// times so that Close comes both before the Read waits and while it does.
func TestCloseEndsAWaitingRead(t *testing.T) {
	for i := range 200 {
		r, _ := pipe(t)
		c := start(r, 8)
		closed := make(chan error, 1)
		go func() { closed <- r.Close() }()
		timeout := time.After(10 * time.Second)
		for range 2 {
			select {
			case res := <-c:
				if !errors.Is(res.err, os.ErrClosed) {
					t.Fatalf("round %d: the waiting Read returned %v; want os.ErrClosed", i, res.err)
				}
				c = nil
			case err := <-closed:
				if err != nil {
					t.Fatalf("round %d: Close: %v", i, err)
				}
				closed = nil
			case <-timeout:
				t.Fatalf("round %d: a waiting Read and Close did not both return within 10 s", i)
			}
		}
		if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("round %d: a Read after Close returned %v; want os.ErrClosed", i, err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("round %d: a second Close: %v", i, err)
		}
	}
}

// TestCloseReleasesTheDescriptor: after Close the descriptor and the
// eventfd are closed; New sets O_NONBLOCK on the descriptor it takes.
func TestCloseReleasesTheDescriptor(t *testing.T) {
	r, wfd := newPipe(t)
	defer syscall.Close(wfd)
	fd := r.fd
	fl, err := fcntl(fd, syscall.F_GETFL)
	if err != nil || fl&syscall.O_NONBLOCK == 0 {
		t.Fatalf("after New, the descriptor's flags are %#x (%v); want O_NONBLOCK set", fl, err)
	}
	wake := r.wake
	r.Close()
	for _, fd := range []int{fd, wake} {
		if _, err := fcntl(fd, syscall.F_GETFD); err != syscall.EBADF {
			t.Errorf("after Close, F_GETFD on descriptor %d: %v; want EBADF", fd, err)
		}
	}
}

func fcntl(fd, cmd int) (int, error) {
	v, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

// TestWaitsAfterAFullRead: after a read that filled the caller's buffer,
// the next Read tries to read at once, finds nothing and waits, rather
// than reporting the empty pipe as an error; then it returns what comes,
// and Close ends the wait after that.
func TestWaitsAfterAFullRead(t *testing.T) {
	r, w := pipe(t)
	if _, err := w.Write([]byte("abcd")); err != nil {
		t.Fatal(err)
	}
	if s, err := read(t, r, 4); s != "abcd" || err != nil {
		t.Fatalf("read %q, %v; want %q, nil", s, err, "abcd")
	}
	waits := waits(r)
	c := start(r, 4)
	// Write only once that Read waits, so that it finds the pipe empty
	// first.
	if w := awaitWait(t, waits); w {
		t.Fatal("the Read waited in Go's poller; want poll(2): ShareWaits was not called")
	}
	if _, err := w.Write([]byte("ef")); err != nil {
		t.Fatal(err)
	}
	if res := await(t, c, "the Read after a full one did not return the input"); res.s != "ef" || res.err != nil {
		t.Fatalf("the Read after a full one returned %q, %v; want %q, nil", res.s, res.err, "ef")
	}
}

// waits has r report each wait it starts on the returned channel: true
// for one in Go's poller, false for one in poll(2).
func waits(r *Reader) <-chan bool {
	c := make(chan bool, 16)
	r.waiting = func(inPoller bool) { c <- inPoller }
	return c
}

// awaitWait returns how the next wait waits, failing the test when none
// starts within 10 s.
func awaitWait(t *testing.T, c <-chan bool) bool {
	t.Helper()
	select {
	case w := <-c:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no Read started to wait within 10 s")
		return false
	}
}

// TestShareWaitsFollowsBusy: with ShareWaits, a Read that must wait
// waits in Go's poller while busy says so and in poll(2) otherwise, and
// returns the input either way.
func TestShareWaitsFollowsBusy(t *testing.T) {
	r, w := pipe(t)
	var busy atomic.Bool
	r.ShareWaits(busy.Load)
	waits := waits(r)
	polledFd := -1
	for i, want := range []bool{false, true, false, true} {
		// A wait that began again (after EINTR, say) leaves a report
		// behind: each round sees its own.
		for len(waits) > 0 {
			<-waits
		}
		busy.Store(want)
		c := start(r, 16)
		if got := awaitWait(t, waits); got != want {
			t.Fatalf("Read %d waited in Go's poller: %v; want %v", i, got, want)
		}
		// Waiting in poll(2), the Reader keeps no descriptor in Go's
		// poller, which would wake a thread for the same input: the
		// duplicate it waited on before is closed.
		r.pmu.Lock()
		watched := r.polled
		r.pmu.Unlock()
		switch {
		case want && watched == nil:
			t.Fatalf("Read %d waits in Go's poller without a file", i)
		case want:
			polledFd = fdOf(t, watched)
		case watched != nil:
			t.Fatalf("Read %d waits in poll(2) with a file in Go's poller", i)
		case polledFd >= 0:
			if _, err := fcntl(polledFd, syscall.F_GETFD); err != syscall.EBADF {
				t.Fatalf("Read %d waits in poll(2), and the descriptor Go's poller watched is open (%v); want EBADF", i, err)
			}
		}
		msg := fmt.Sprintf("message %d\n", i)
		if _, err := w.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if res := await(t, c, "a waiting Read did not return the input"); res.s != msg || res.err != nil {
			t.Fatalf("Read %d returned %q, %v; want %q, nil", i, res.s, res.err, msg)
		}
	}
}

// fdOf returns f's descriptor, leaving its mode alone (f.Fd would make
// it blocking).
func fdOf(t *testing.T, f *os.File) int {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	if err := raw.Control(func(d uintptr) { fd = int(d) }); err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestCloseWhileBusyIsAsked: a Close that comes while a Read asks busy
// ends that Read, with os.ErrClosed, instead of leaving it to wait in
// Go's poller for a file Close has no more to close.
func TestCloseWhileBusyIsAsked(t *testing.T) {
	r, wfd := newPipe(t)
	defer syscall.Close(wfd)
	closed := make(chan error, 1)
	r.ShareWaits(func() bool {
		go func() { closed <- r.Close() }()
		for !r.closed.Load() {
			runtime.Gosched()
		}
		return true
	})
	res := await(t, start(r, 8), "a Read closed while it asked busy did not return")
	if !errors.Is(res.err, os.ErrClosed) {
		t.Fatalf("the Read returned %q, %v; want os.ErrClosed", res.s, res.err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s")
	}
}

// TestUnpollableWaitsInPoll: a descriptor Go's poller cannot watch (a
// regular file) is read whatever busy says, and is not tried again.
func TestUnpollableWaitsInPoll(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("abc"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fd, err := syscall.Open(f.Name(), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(fd, "plain file")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	asked := 0
	r.ShareWaits(func() bool { asked++; return true })
	for _, want := range []string{"abc", ""} {
		if s, err := read(t, r, 8); s != want || (want == "" && err != io.EOF) {
			t.Fatalf("read %q, %v; want %q", s, err, want)
		}
		if !r.unpollable.Load() {
			t.Fatal("after a Read of a regular file, unpollable is not set")
		}
	}
	if asked != 1 {
		t.Fatalf("busy was asked %d times; want once, before the poller refused the file", asked)
	}
}

// TestCloseEndsAWaitInGoPoller: Close ends a Read that Go's poller holds,
// with os.ErrClosed, and releases the descriptor.
func TestCloseEndsAWaitInGoPoller(t *testing.T) {
	for i := range 50 {
		r, wfd := newPipe(t)
		r.ShareWaits(func() bool { return true })
		waits := waits(r)
		c := start(r, 8)
		if !awaitWait(t, waits) {
			t.Fatal("the Read waited in poll(2); want Go's poller")
		}
		closed := make(chan error, 1)
		go func() { closed <- r.Close() }()
		if res := await(t, c, "Close did not end a Read waiting in Go's poller"); !errors.Is(res.err, os.ErrClosed) {
			t.Fatalf("round %d: after Close, the waiting Read returned %q, %v; want os.ErrClosed", i, res.s, res.err)
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close did not return within 10 s", i)
		}
		if _, err := fcntl(r.fd, syscall.F_GETFD); err != syscall.EBADF {
			t.Fatalf("round %d: after Close, F_GETFD on the descriptor: %v; want EBADF", i, err)
		}
		syscall.Close(wfd)
	}
}

// TestSocketKeepsItsFlags: a socket is read without O_NONBLOCK on its
// open file description (which a process's stdout may share), to its end,
// and Close ends a Read that waits on it.
func TestSocketKeepsItsFlags(t *testing.T) {
	p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(p[1]), "peer")
	defer peer.Close()
	r, err := NewSocket(p[0], "test socket")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Go's poller cannot wait for a blocking socket: it waits in poll(2)
	// whatever ShareWaits says.
	r.ShareWaits(func() bool { return true })
	waits := waits(r)
	if fl, err := fcntl(p[0], syscall.F_GETFL); err != nil || fl&syscall.O_NONBLOCK != 0 {
		t.Fatalf("the socket's flags are %#x (%v); want O_NONBLOCK clear", fl, err)
	}
	c := start(r, 16)
	if awaitWait(t, waits) {
		t.Fatal("a Read of the socket waited in Go's poller; want poll(2)")
	}
	if _, err := peer.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	if res := await(t, c, "a waiting Read did not return the socket's input"); res.s != "hi\n" || res.err != nil {
		t.Fatalf("read %q, %v; want %q, nil", res.s, res.err, "hi\n")
	}
	c = start(r, 16)
	// Close waits for the Read to leave: on its own goroutine, so that a
	// Read it fails to end fails the test instead of hanging it.
	go r.Close()
	if res := await(t, c, "Close did not end a Read waiting on the socket"); !errors.Is(res.err, os.ErrClosed) {
		t.Fatalf("after Close, the waiting Read returned %v; want os.ErrClosed", res.err)
	}
}

// TestSocketEOF: a socket whose peer is gone reads io.EOF.
func TestSocketEOF(t *testing.T) {
	p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewSocket(p[0], "test socket")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	syscall.Close(p[1])
	if s, err := read(t, r, 8); s != "" || err != io.EOF {
		t.Fatalf("read %q, %v; want io.EOF", s, err)
	}
}

// TestEveryCloseWaitsForTheRelease: Close called on many goroutines at
// once returns, every time, only once the descriptor is closed.
func TestEveryCloseWaitsForTheRelease(t *testing.T) {
	for i := range 100 {
		r, wfd := newPipe(t)
		go r.Read(make([]byte, 8))
		bad := make(chan string, 4)
		done := make(chan struct{})
		for range 4 {
			go func() {
				r.Close()
				if _, err := fcntl(r.wake, syscall.F_GETFD); err != syscall.EBADF {
					bad <- "a Close returned before the eventfd was closed"
				}
				done <- struct{}{}
			}()
		}
		for range 4 {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a Close did not return within 10 s", i)
			}
		}
		syscall.Close(wfd)
		select {
		case msg := <-bad:
			t.Fatalf("round %d: %s", i, msg)
		default:
		}
	}
}

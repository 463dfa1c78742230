//go:build linux

package waitread

import (
	"errors"
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// pipe returns a Reader of a new pipe's read end and the write end.
func pipe(t *testing.T) (*Reader, *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, err := New(p[0], "test pipe")
	if err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(p[1]), "test pipe writer")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// read reads once on another goroutine and returns what it got, failing
// the test when nothing comes back within 10 s.
func read(t *testing.T, r *Reader, n int) (string, error) {
	t.Helper()
	type result struct {
		s   string
		err error
	}
	c := make(chan result, 1)
	go func() {
		b := make([]byte, n)
		k, err := r.Read(b)
		c <- result{string(b[:k]), err}
	}()
	select {
	case res := <-c:
		return res.s, res.err
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not return within 10 s")
		return "", nil
	}
}

// TestReadsWhatIsWrittenThenEOF: a Read waits for input and returns it,
// in pieces as large as the caller's buffer, then io.EOF once the writer
// is gone.
func TestReadsWhatIsWrittenThenEOF(t *testing.T) {
	r, w := pipe(t)
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := r.Read(b)
		got <- string(b[:n])
	}()
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "hello\n" {
			t.Fatalf("read %q; want %q", s, "hello\n")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Read did not return the input within 10 s")
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
		c := make(chan error, 1)
		go func() {
			_, err := r.Read(make([]byte, 8))
			c <- err
		}()
		closed := make(chan error, 1)
		go func() { closed <- r.Close() }()
		timeout := time.After(10 * time.Second)
		for range 2 {
			select {
			case err := <-c:
				if !errors.Is(err, os.ErrClosed) {
					t.Fatalf("round %d: the waiting Read returned %v; want os.ErrClosed", i, err)
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
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[1])
	r, err := New(p[0], "test pipe")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fcntl(p[0], syscall.F_GETFL)
	if err != nil || fl&syscall.O_NONBLOCK == 0 {
		t.Fatalf("after New, the descriptor's flags are %#x (%v); want O_NONBLOCK set", fl, err)
	}
	wake := r.wake
	r.Close()
	for _, fd := range []int{p[0], wake} {
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
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 4)
		n, err := r.Read(b)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(b[:n])
	}()
	// Write only once that Read is inside (it holds use across its system
	// calls), so that it finds the pipe empty first.
	for deadline := time.Now().Add(10 * time.Second); r.use.TryLock(); runtime.Gosched() {
		r.use.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the second Read did not start within 10 s")
		}
	}
	if _, err := w.Write([]byte("ef")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "ef" {
			t.Fatalf("the Read after a full one returned %q; want %q", s, "ef")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Read after a full one did not return the input within 10 s")
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
	if fl, err := fcntl(p[0], syscall.F_GETFL); err != nil || fl&syscall.O_NONBLOCK != 0 {
		t.Fatalf("the socket's flags are %#x (%v); want O_NONBLOCK clear", fl, err)
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 16)
		n, _ := r.Read(b)
		got <- string(b[:n])
	}()
	if _, err := peer.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "hi\n" {
			t.Fatalf("read %q; want %q", s, "hi\n")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Read did not return the socket's input within 10 s")
	}
	c := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 16))
		c <- err
	}()
	r.Close()
	select {
	case err := <-c:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("after Close, the waiting Read returned %v; want os.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a Read waiting on the socket within 10 s")
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
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		r, err := New(p[0], "test pipe")
		if err != nil {
			t.Fatal(err)
		}
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
		syscall.Close(p[1])
		select {
		case msg := <-bad:
			t.Fatalf("round %d: %s", i, msg)
		default:
		}
	}
}

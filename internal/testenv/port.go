//go:build unix

package testenv

import (
	"fmt"
	"syscall"
	"testing"
)

// ReservePort returns a loopback TCP port that nothing else on the
// machine is given while the test runs, for a child process that must be
// told its port before it starts (a server that reads PORT and writes it
// into the URLs it serves). Prefer port 0 and the address a child reports
// when it can report one.
//
// The port is held by a socket bound to 127.0.0.1 with SO_REUSEADDR that
// never listens: the kernel gives the port to no one binding port 0, and
// a connection to it is refused, so the address doubles as one where
// nothing listens. A child that binds it with SO_REUSEADDR (Go's net and
// Node both do) can listen on it, since a socket that only binds does
// not conflict on Linux. The socket is closed when the test ends.
func ReservePort(t testing.TB) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("reserving a port: socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		t.Fatalf("reserving a port: SO_REUSEADDR: %v", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("reserving a port: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("reserving a port: getsockname: %v", err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("reserving a port: bound to %v, not an IPv4 address", sa)
	}
	return in.Port
}

// RefusedAddr returns a loopback host:port where nothing listens and
// nothing else will while the test runs: a connection to it is refused.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", ReservePort(t))
}

package testenv

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// RawDial opens a TCP connection to addr for a test to write raw HTTP on,
// closed when the test ends.
func RawDial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ClosedByServer reads c until the server closes it and returns what it
// sent; it fails t when the connection is still open after failAfter, a
// guard against a hang, never the thing waited for.
func ClosedByServer(t testing.TB, c net.Conn, failAfter time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(failAfter))
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept the connection open for %v; got %q", failAfter, b)
	}
	return string(b)
}

//go:build unix

package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
)

// ephemeralPorts is the size of the range the kernel gives port-0
// listeners from.
func ephemeralPorts(t *testing.T) int {
	var lo, hi int
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if _, serr := fmt.Sscan(string(b), &lo, &hi); err != nil || serr != nil || hi < lo {
		return 28232 // Linux's default range, 32768-60999
	}
	return hi - lo + 1
}

// TestReservePort: a connection to a reserved port is refused; no
// listener on port 0 is given it, as many of them as the ephemeral range
// has ports; a Go listener, as the child it is for, can take it.
func TestReservePort(t *testing.T) {
	t.Parallel()
	port := ReservePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dialling the reserved %s: %v; want connection refused", addr, err)
	}
	for range ephemeralPorts(t) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if got == port {
			t.Fatalf("a listener on port 0 was given the reserved port %d", port)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on the reserved %s, as the child it is for would: %v", addr, err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialling %s once a listener has it: %v", addr, err)
	}
	c.Close()
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package upstream

import (
	"errors"
	"net"
	"syscall"
)

// canCheckIdle says idleConnUsable can look at a connection at rest
// here; where it cannot, every POST goes through net/http.
const canCheckIdle = true

// idleConnUsable reports whether a pooled connection may carry a request:
// the server has neither closed it nor sent anything on it since its last
// response. It peeks without waiting, one system call.
func idleConnUsable(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var perr error
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, perr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait: the answer is whatever the peek said
	})
	return err == nil && errors.Is(perr, syscall.EAGAIN)
}

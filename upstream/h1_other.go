//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package upstream

import "net"

// canCheckIdle says idleConnUsable cannot look at a connection at rest
// here: every POST goes through net/http.
const canCheckIdle = false

func idleConnUsable(net.Conn) bool { return false }

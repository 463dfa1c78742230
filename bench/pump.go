package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// pump is the physical floor: a process that spawns the server and copies
// bytes both ways without looking at them, the same process topology as
// the bridge.
func pump(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("pump needs a command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		io.Copy(os.Stdout, out)
		close(done)
	}()
	io.Copy(in, os.Stdin)
	in.Close()
	<-done
	return cmd.Wait()
}

// tcpPump is the floor of a remote hop: a process between an HTTP client
// and the server at the URL argv[0] that copies each accepted connection's
// bytes to a connection of its own to the server, both ways, without
// looking at them. It prints "listening on URL" on stderr, the server's
// URL with the pump's address, and serves until it is killed.
func tcpPump(argv []string) error {
	if len(argv) != 1 {
		return fmt.Errorf("tcp-pump needs the server's URL")
	}
	target, err := url.Parse(argv[0])
	if err != nil || target.Host == "" {
		return fmt.Errorf("tcp-pump: %q is not a server URL (http://HOST:PORT/path)", argv[0])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	front := *target
	front.Host = ln.Addr().String()
	fmt.Fprintf(os.Stderr, "listening on %s\n", &front)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go pumpConn(c, target.Host)
	}
}

// pumpConn copies c to a new connection to addr and back until either
// side closes, then closes both.
func pumpConn(c net.Conn, addr string) {
	defer c.Close()
	s, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcp-pump:", err)
		return
	}
	defer s.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		copyHalf(s, c)
	}()
	copyHalf(c, s)
	wg.Wait()
}

// copyHalf copies src to dst and then closes dst's write side, so the
// other end reads EOF as it would without the pump.
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		fmt.Fprintln(os.Stderr, "tcp-pump:", err)
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

//go:build !linux

// Package waitread reads a pipe, terminal or socket with its thread
// waiting in poll(2); see the Linux implementation. Elsewhere it is not
// supported, and callers read through Go's poller.
package waitread

import (
	"errors"
	"os"
)

// Supported says New can work here.
const Supported = false

// Reader is not available on this system.
type Reader struct{}

// New fails here: callers read through an *os.File instead.
func New(fd int, name string) (*Reader, error) {
	return nil, &os.PathError{Op: "waitread", Path: name, Err: errors.ErrUnsupported}
}

// NewSocket fails here: callers read through an *os.File instead.
func NewSocket(fd int, name string) (*Reader, error) { return New(fd, name) }

// Read is never reached: New fails.
func (r *Reader) Read(p []byte) (int, error) { return 0, errors.ErrUnsupported }

// Close is never reached: New fails.
func (r *Reader) Close() error { return nil }

// ShareWaits is never reached: New fails.
func (r *Reader) ShareWaits(busy func() bool) {}

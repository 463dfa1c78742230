// Package record lets a test peer keep the exact bytes it receives, so a
// test can compare what a server got byte for byte (the ElicitResult
// above all) instead of what the peer's SDK decoded.
package record

import (
	"io"
	"os"
)

// Env names the file a peer appends what it receives to; unset, nothing is
// recorded.
const Env = "AEP_TEST_RECORD"

// Stdin makes os.Stdin a pipe fed from the real stdin, every byte of
// which is also appended to the file Env names. It does nothing when Env
// is unset. Call it before the peer starts reading.
func Stdin() error {
	path := os.Getenv(Env)
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	real := os.Stdin
	os.Stdin = r
	go func() {
		io.Copy(io.MultiWriter(f, w), real) // the file first: once the peer has read a message, it is recorded
		f.Close()
		w.Close()
	}()
	return nil
}

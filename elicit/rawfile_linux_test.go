package elicit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRawFileKinds: only a non-blocking file in Go's poller (a pipe as
// os.Pipe makes it) is read and written raw; a regular file and a
// blocking pipe are used as they are.
func TestRawFileKinds(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if newRawFile(r) == nil || newRawFile(w) == nil {
		t.Error("os.Pipe's ends: want them read and written raw")
	}
	reg, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if newRawFile(reg) != nil {
		t.Error("a regular file: want it used as it is")
	}
	// Fd puts a file in blocking mode, out of reach of the poller.
	br, bw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	defer bw.Close()
	br.Fd()
	if newRawFile(br) != nil {
		t.Error("a blocking pipe: want it used as it is")
	}
	if newRawFile(strings.NewReader("")) != nil {
		t.Error("a reader that is not a file: want it used as it is")
	}
}

// TestStreamConnRawPipes: messages cross StreamConns over pipes whole and
// in order, a write larger than the pipe holds waits for the reader
// instead of failing, the end of the input reads as io.EOF, and Close
// ends a Read that waits.
func TestStreamConnRawPipes(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	src := NewStreamConn(strings.NewReader(""), w, w.Close, 0)
	dst := NewStreamConn(r, io.Discard, r.Close, 0)
	big := `{"x":"` + strings.Repeat("y", 1<<20) + `"}` // over a pipe's 64 KiB
	msgs := []string{`{"a":1}`, big, `{"b":2}`}
	wrote := make(chan error, 1)
	go func() {
		for _, m := range msgs {
			if err := src.Write(t.Context(), Frame{Head: []byte(m)}); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- src.Close()
	}()
	for _, want := range msgs {
		f, err := dst.Read(t.Context())
		if err != nil {
			t.Fatalf("reading %.20s: %v", want, err)
		}
		if !bytes.Equal(f.Head, []byte(want)) {
			t.Fatalf("got %d bytes %.20q; want %d bytes %.20q", len(f.Head), f.Head, len(want), want)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if _, err := dst.Read(t.Context()); err != io.EOF {
		t.Fatalf("after the writer closed: %v; want io.EOF", err)
	}
	dst.Close()

	// Close under a Read that waits for input.
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	waiting := NewStreamConn(r2, io.Discard, r2.Close, 0)
	read := make(chan error, 1)
	go func() {
		_, err := waiting.Read(t.Context())
		read <- err
	}()
	waiting.Close()
	if err := <-read; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a Read that waited when Close came: %v; want os.ErrClosed", err)
	}
}

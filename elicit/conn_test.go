package elicit

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

func TestStreamConnFraming(t *testing.T) {
	in := "{\"a\":1}\n\n  {\"b\":2}  \r\n" + strings.Repeat("x", 100) + "\n{\"c\":3}\n{\"partial\""
	c := NewStreamConn(strings.NewReader(in), io.Discard, nil, 64)
	tests := []struct {
		head   string
		stream bool // the rest of the line comes as Rest
		more   bool
	}{
		{head: `{"a":1}`, more: true},
		{head: `{"b":2}`, more: true},
		{head: strings.Repeat("x", 100), stream: true},
		{head: `{"c":3}`},
		{head: `{"partial"`},
	}
	for _, tt := range tests {
		f, err := c.Read(t.Context())
		if err != nil {
			t.Fatalf("want %.20s: %v", tt.head, err)
		}
		got := string(f.Head)
		if f.Rest != nil {
			rest, err := io.ReadAll(f.Rest)
			if err != nil {
				t.Fatal(err)
			}
			got += string(rest)
			if f.Limit != 64 {
				t.Errorf("a streamed frame's Limit: got %d; want 64", f.Limit)
			}
		}
		if got != tt.head || (f.Rest != nil) != tt.stream || f.More != tt.more {
			t.Fatalf("got %q (stream %t, more %t); want %q (stream %t, more %t)", got, f.Rest != nil, f.More, tt.head, tt.stream, tt.more)
		}
	}
	if _, err := c.Read(t.Context()); err != io.EOF {
		t.Fatalf("at the end: %v; want EOF", err)
	}
}

// TestStreamConnLongLineInPieces: a line longer than the read buffer but
// within the limit is read whole, across buffer fills.
func TestStreamConnLongLineInPieces(t *testing.T) {
	long := `{"x":"` + strings.Repeat("y", 200<<10) + `"}`
	c := NewStreamConn(strings.NewReader(long+"\n"+`{"z":1}`+"\n"), io.Discard, nil, 0)
	f, err := c.Read(t.Context())
	if err != nil || f.Rest != nil || string(f.Head) != long {
		t.Fatalf("got %d bytes, stream %t, %v; want the %d-byte line whole", len(f.Head), f.Rest != nil, err, len(long))
	}
	if f, _ := c.Read(t.Context()); string(f.Head) != `{"z":1}` {
		t.Fatalf("after it: got %q", f.Head)
	}
}

func TestStreamConnMoreIgnoresPartialLines(t *testing.T) {
	pr, pw := io.Pipe()
	c := NewStreamConn(pr, io.Discard, nil, 0)
	go pw.Write([]byte("{\"a\":1}\n{\"b\":"))
	f, _ := c.Read(t.Context())
	if string(f.Head) != `{"a":1}` {
		t.Fatalf("got %s", f.Head)
	}
	if f.More {
		t.Fatal("a partial line counts as a buffered message; the relay would hold output while the read blocks")
	}
	pw.Close()
}

func TestStreamConnHeldWritesKeepOrder(t *testing.T) {
	var out bytes.Buffer
	ctx := t.Context()
	c := NewStreamConn(strings.NewReader(""), &out, nil, 0)
	c.Write(ctx, Frame{Head: []byte("1"), More: true})
	c.Write(ctx, Frame{Head: []byte("2"), More: true})
	if out.Len() != 0 {
		t.Fatal("held messages were written early")
	}
	c.Write(ctx, Frame{Head: []byte("3")})
	if got := out.String(); got != "1\n2\n3\n" {
		t.Fatalf("after a write without More: got %q", got)
	}
	c.Write(ctx, Frame{Head: []byte("4"), More: true})
	c.Write(ctx, Frame{Rest: strings.NewReader("5")})
	c.Write(ctx, Frame{Head: []byte("6"), More: true})
	if err := c.Write(ctx, Frame{}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "1\n2\n3\n4\n5\n6\n" {
		t.Fatalf("got %q", got)
	}
}

func TestStreamConnWriteAfterCancel(t *testing.T) {
	var out bytes.Buffer
	c := NewStreamConn(strings.NewReader(""), &out, nil, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Write(ctx, Frame{Head: []byte("1")}); err == nil || out.Len() != 0 {
		t.Fatalf("a write under a cancelled context: %v, wrote %q; want the context's error and nothing written", err, out.String())
	}
}

// TestStreamConnCloseSendsHeld: what Write held back is written by Close.
func TestStreamConnCloseSendsHeld(t *testing.T) {
	var out bytes.Buffer
	closed := false
	c := NewStreamConn(strings.NewReader(""), &out, func() error { closed = true; return nil }, 0)
	c.Write(t.Context(), Frame{Head: []byte("1"), More: true})
	if err := c.Close(); err != nil || !closed || out.String() != "1\n" {
		t.Fatalf("Close: %v, closer called %t, wrote %q; want the held message written, then the closer", err, closed, out.String())
	}
}

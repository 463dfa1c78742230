package elicit

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestStreamConnFraming(t *testing.T) {
	in := "{\"a\":1}\n\n  {\"b\":2}  \r\n" + strings.Repeat("x", 100) + "\n{\"c\":3}\n{\"partial\""
	c := NewStreamConn(strings.NewReader(in), io.Discard, nil, 64)
	want := []string{`{"a":1}`, `{"b":2}`, "too large", `{"c":3}`, `{"partial"`}
	for _, w := range want {
		got, err := c.ReadMessage()
		var tl *TooLargeError
		switch {
		case w == "too large":
			if !errors.As(err, &tl) {
				t.Fatalf("got %q, %v; want a TooLargeError", got, err)
			}
		case err != nil:
			t.Fatalf("want %s: %v", w, err)
		case string(got) != w:
			t.Fatalf("got %s; want %s", got, w)
		}
	}
	if _, err := c.ReadMessage(); err != io.EOF {
		t.Fatalf("at the end: %v; want EOF", err)
	}
}

func TestStreamConnBufferedIgnoresPartialLines(t *testing.T) {
	pr, pw := io.Pipe()
	c := NewStreamConn(pr, io.Discard, nil, 0)
	go pw.Write([]byte("{\"a\":1}\n{\"b\":"))
	if m, _ := c.ReadMessage(); string(m) != `{"a":1}` {
		t.Fatalf("got %s", m)
	}
	if c.Buffered() {
		t.Fatal("a partial line counts as a buffered message; the relay would hold output while the read blocks")
	}
	pw.Close()
}

func TestStreamConnDeferredWritesKeepOrder(t *testing.T) {
	var out bytes.Buffer
	c := NewStreamConn(strings.NewReader(""), &out, nil, 0)
	c.WriteDeferred([]byte("1"))
	c.WriteDeferred([]byte("2"))
	if out.Len() != 0 {
		t.Fatal("deferred messages were written early")
	}
	c.WriteMessage([]byte("3"))
	c.WriteDeferred([]byte("4"))
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "1\n2\n3\n4\n" {
		t.Fatalf("got %q", got)
	}
}

package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text from peers (a server's message, field labels, session names, a
// rejection's detail) is printed to the operator's terminal. A terminal
// acts on control characters: ESC starts the ANSI sequences that move the
// cursor, rewrite the title or hide text, and C1 controls such as U+009B
// do the same on terminals that read them. Bidirectional controls make
// text read differently than it is. So every such character is printed as
// a visible escape instead.

// unsafeRune reports whether r must not reach a terminal as itself: C0 and
// C1 controls, DEL, the bidirectional controls, and invalid UTF-8.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

// printable returns s with every unsafe character written as an escape
// (\x1b, \u202e). With keepNewlines, line feeds pass (and tabs too).
func printable(s string, keepNewlines bool) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case keepNewlines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// jsonSafe rewrites a valid JSON text so that it carries no character a
// terminal acts on: encoding/json already escapes C0 controls, and this
// escapes DEL, C1 and the bidirectional controls, which can only occur
// inside strings, as \uXXXX; a byte that is not UTF-8 becomes \ufffd, as
// JSON decoders read it anyway. The result decodes to the same value.
func jsonSafe(b []byte) []byte {
	s := string(b)
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return b
	}
	var out strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		if unsafeRune(r) && r >= 0x20 {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteString(s[i : i+size])
	}
	return []byte(out.String())
}

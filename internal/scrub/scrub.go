package scrub

import (
	"bytes"
	"slices"
	"strings"
)

// span is a run of bytes to overwrite, at an offset into a block, with
// fill.
type span struct {
	off, n int
	fill   byte
}

// envSpans returns the values of the variables named in block, an
// environment block of NAME=VALUE strings each ended by NUL: they are
// overwritten with NUL, so the variable reads as empty.
func envSpans(block []byte, names []string) []span {
	var out []span
	for off := 0; off < len(block); {
		end := bytes.IndexByte(block[off:], 0)
		if end < 0 {
			end = len(block) - off
		}
		entry := block[off : off+end]
		if name, value, ok := bytes.Cut(entry, []byte("=")); ok && len(value) > 0 && slices.Contains(names, string(name)) {
			out = append(out, span{off: off + len(name) + 1, n: len(value), fill: 0})
		}
		off += end + 1
	}
	return out
}

// argSpans returns the values of the flags named in block, an argument
// block of strings each ended by NUL (the program's name first), up to
// an argument "--": a flag's value is the next argument after -name or
// --name, or what follows the "=" of -name=value or --name=value, as the
// flag package reads them. They are overwritten with '*', so ps shows
// the flag and not its value.
func argSpans(block []byte, flags []string) []span {
	var out []span
	valueNext := false
	for i, off := 0, 0; off < len(block); i++ {
		end := bytes.IndexByte(block[off:], 0)
		if end < 0 {
			end = len(block) - off
		}
		arg := string(block[off : off+end])
		switch {
		case i == 0:
		case valueNext:
			valueNext = false
			if len(arg) > 0 {
				out = append(out, span{off: off, n: len(arg), fill: '*'})
			}
		case arg == "--":
			return out
		case strings.HasPrefix(arg, "-"):
			name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
			if !slices.Contains(flags, name) {
				break
			}
			if !hasValue {
				valueNext = true
			} else if len(value) > 0 {
				out = append(out, span{off: off + len(arg) - len(value), n: len(value), fill: '*'})
			}
		}
		off += end + 1
	}
	return out
}

package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
)

// A whole message's envelope, read in the one pass that also checks the
// message is JSON, as json.Valid does. A proxy that reads every message
// it relays whole this way pays one pass over its bytes for a message it
// does not act on: strings go eight bytes at a time, and nothing is
// allocated.
//
// ReadWhole reads the top-level members of a JSON-RPC message (id,
// method, params, result, error), and, inside the params and result
// objects, the members the caller names. Member names are matched exactly,
// after their escapes are decoded; when a member appears twice, the last
// one counts. These are the rules the Scanner follows for a message read
// as a stream, so a message reads the same whatever its size.

// MaxDepth is the deepest nesting json.Valid accepts: Valid and ReadWhole
// refuse a deeper value as it does.
const MaxDepth = 10000

// MaxInner is how many members of params and result a Whole holds.
const MaxInner = 6

// Whole is the envelope ReadWhole reads of a message: the values of its
// members, as slices of the message, nil when absent.
type Whole struct {
	ID, Method, Params, Result, Error []byte
	// InParams and InResult hold the members of params and of result
	// that WholeOptions names, in its order.
	InParams, InResult [MaxInner][]byte
}

// WholeOptions names the members of params and of result ReadWhole
// reads, up to MaxInner each.
type WholeOptions struct {
	Params, Result []string
}

// Valid reports whether b is one JSON value, exactly as json.Valid does,
// in one pass and without allocating.
func Valid(b []byte) bool {
	end, ok := SkipValue(b, SkipSpace(b, 0), 0)
	return ok && SkipSpace(b, end) == len(b)
}

// ReadWhole checks that b is one JSON value, and when it is an object
// reads its envelope into w. It reports whether b is valid JSON, exactly
// as json.Valid would, and whether it is an object.
func ReadWhole(b []byte, o *WholeOptions, w *Whole) (object, valid bool) {
	*w = Whole{}
	i := SkipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		end, ok := SkipValue(b, i, 0)
		return false, ok && SkipSpace(b, end) == len(b)
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true, SkipSpace(b, i+1) == len(b)
	}
	for {
		key, next, ok := ReadKey(b, i)
		if !ok {
			return true, false
		}
		start := next
		var end int
		switch string(key) {
		case "params":
			end, ok = readInner(b, start, o.Params, &w.InParams)
			w.Params = b[start:end]
		case "result":
			end, ok = readInner(b, start, o.Result, &w.InResult)
			w.Result = b[start:end]
		default:
			end, ok = SkipValue(b, start, 1)
			if ok {
				switch string(key) {
				case "id":
					w.ID = b[start:end]
				case "method":
					w.Method = b[start:end]
				case "error":
					w.Error = b[start:end]
				}
			}
		}
		if !ok {
			return true, false
		}
		var closed bool
		if i, closed, ok = nextMember(b, end); !ok || closed {
			return true, ok && SkipSpace(b, i) == len(b)
		}
	}
}

// nextMember reads what follows a member of an object, ending at end: a
// comma and the next member's start, or the object's closing brace, after
// which it returns (closed).
func nextMember(b []byte, end int) (i int, closed, ok bool) {
	i = SkipSpace(b, end)
	switch {
	case i == len(b):
		return i, false, false
	case b[i] == ',':
		return SkipSpace(b, i+1), false, true
	case b[i] == '}':
		return i + 1, true, true
	}
	return i, false, false
}

// readInner reads the value of params or result at b[i:], recording the
// members of an object that names lists in out, and returns where the
// value ends.
func readInner(b []byte, i int, names []string, out *[MaxInner][]byte) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return SkipValue(b, i, 1)
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, next, ok := ReadKey(b, i)
		if !ok {
			return i, false
		}
		end, ok := SkipValue(b, next, 2)
		if !ok {
			return end, false
		}
		for n, name := range names[:min(len(names), MaxInner)] {
			if string(key) == name {
				out[n] = b[next:end]
			}
		}
		var closed bool
		if i, closed, ok = nextMember(b, end); !ok || closed {
			return i, ok
		}
	}
}

// ReadKey reads a member name at b[i:] and the colon after it, and
// returns the name (its escapes decoded) and where its value starts.
func ReadKey(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	end, escaped, ok := skipString(b, i)
	if !ok {
		return nil, end, false
	}
	key := b[i+1 : end-1]
	if escaped {
		key = decodeName(b[i:end])
	}
	j := SkipSpace(b, end)
	if j == len(b) || b[j] != ':' {
		return nil, j, false
	}
	return key, SkipSpace(b, j+1), true
}

// decodeName decodes a member name with escapes; a name over maxKey raw
// bytes decodes to nothing, as the Scanner's does.
func decodeName(quoted []byte) []byte {
	if len(quoted) > maxKey+2 {
		return nil
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil
	}
	return []byte(s)
}

// SkipSpace returns where the JSON white space at b[i:] ends.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// SkipValue checks the JSON value at b[i:], depth containers deep, as
// json.Valid would (MaxDepth included), and returns where it ends. It is
// iterative: a value nested as deep as JSON allows costs a byte of stack
// per level, not a call.
func SkipValue(b []byte, i, depth int) (int, bool) {
	var small [64]byte
	open := small[:0] // '{' or '[' for each container entered here
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth+len(open)+1 > MaxDepth {
				return i, false
			}
			j := SkipSpace(b, i+1)
			if j < len(b) && (c == '{' && b[j] == '}' || c == '[' && b[j] == ']') {
				i = j + 1
				break // an empty container: a whole value
			}
			open = append(open, c)
			if c == '{' {
				_, next, ok := ReadKey(b, j)
				if !ok {
					return next, false
				}
				i = next
			} else {
				i = j
			}
			continue
		case '"':
			end, _, ok := skipString(b, i)
			if !ok {
				return end, false
			}
			i = end
		case 't':
			if !bytes.HasPrefix(b[i:], []byte("true")) {
				return i, false
			}
			i += 4
		case 'f':
			if !bytes.HasPrefix(b[i:], []byte("false")) {
				return i, false
			}
			i += 5
		case 'n':
			if !bytes.HasPrefix(b[i:], []byte("null")) {
				return i, false
			}
			i += 4
		default:
			end, ok := skipNumber(b, i)
			if !ok {
				return end, false
			}
			i = end
		}
		// A value ended at b[i]: close the containers it ends, and find
		// where the next value starts.
		for {
			if len(open) == 0 {
				return i, true
			}
			i = SkipSpace(b, i)
			if i == len(b) {
				return i, false
			}
			top := open[len(open)-1]
			if c := b[i]; c == ',' {
				i = SkipSpace(b, i+1)
				if top == '{' {
					_, next, ok := ReadKey(b, i)
					if !ok {
						return next, false
					}
					i = next
				}
				break
			} else if top == '{' && c == '}' || top == '[' && c == ']' {
				open = open[:len(open)-1]
				i++
				continue
			}
			return i, false
		}
	}
}

// skipNumber checks the number at b[i:] (RFC 8259 §6) and returns where
// it ends.
func skipNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// SWAR constants: a byte repeated in every lane of a uint64.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// special returns a mask with the high bit set in the lane of the first
// byte of x (little-endian) that is a quote, a backslash or a control
// character, and possibly in later lanes; zero when there is none.
func special(x uint64) uint64 {
	q := x ^ ('"' * lanes01)
	s := x ^ ('\\' * lanes01)
	quote := (q - lanes01) &^ q
	slash := (s - lanes01) &^ s
	ctrl := (x - 0x20*lanes01) &^ x
	return (quote | slash | ctrl) & lanes80
}

// skipString checks the string at b[i:] (b[i] is its quote) and returns
// where it ends (after its closing quote), and whether it has escapes.
// Like json.Valid, it accepts any byte at or above 0x20, valid UTF-8 or
// not.
func skipString(b []byte, i int) (int, bool, bool) {
	escaped := false
	i++
	for {
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return i, escaped, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, true
		case c < 0x20:
			return i, escaped, false
		}
		// A backslash.
		escaped = true
		if i+1 >= len(b) {
			return i + 1, escaped, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return i + 2, escaped, false
			}
			i += 6
		default:
			return i + 1, escaped, false
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// DecodeString returns the string a JSON string value decodes to, or ""
// when v is not a string; invalid UTF-8 decodes to U+FFFD, as
// encoding/json decodes it.
func DecodeString(v []byte) string { return decodeString(v) }

// Member returns the value of the member called name of the JSON object
// obj (the last one, when it appears twice), or nil when obj is not an
// object or has none. Names are matched after their escapes are decoded,
// exactly.
func Member(obj []byte, name string) []byte {
	i := SkipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return nil
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	var v []byte
	for {
		key, next, ok := ReadKey(obj, i)
		if !ok {
			return nil
		}
		end, ok := SkipValue(obj, next, 1)
		if !ok {
			return nil
		}
		if string(key) == name {
			v = obj[next:end]
		}
		var closed bool
		if i, closed, ok = nextMember(obj, end); !ok {
			return nil
		} else if closed {
			return v
		}
	}
}

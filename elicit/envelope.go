package elicit

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// The envelope of a whole message, read in one pass that also checks the
// message is JSON, as json.Valid does. The proxy reads every message it
// relays whole this way, so a message it does not act on costs one pass
// over its bytes: strings go eight bytes at a time, and nothing is
// allocated but a method name it does not know.
//
// It reads the top-level members of a JSON-RPC message (id, method,
// params, result, error), and, inside the params and result objects, the
// members the proxy decides by (see envelope). Member names are matched
// exactly, after their escapes are decoded; when a member appears twice,
// the last one counts. These are the rules internal/jsonrpc's Scanner
// follows for a message relayed as a stream, so a message is read the
// same way whatever its size.

// envelope is what readEnvelope reads of a message object: the values of
// its members, as slices of the message (nil when absent).
type envelope struct {
	id, method, params, result, error []byte
	// meta and reqState are params._meta and params.requestState;
	// resultType and resultMeta are result.resultType and result._meta.
	meta, reqState         []byte
	resultType, resultMeta []byte
}

// maxDepth is the deepest nesting json.Valid accepts, and the deepest a
// message the proxy reads whole may be.
const maxDepth = maxParseDepth

// readEnvelope checks that b (without leading white space) is one JSON
// value, and when it is an object reads its envelope. It reports whether
// b is valid JSON, exactly as json.Valid would, and whether it is an
// object.
func readEnvelope(b []byte) (env envelope, object, valid bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		end, ok := skipValue(b, i, 0)
		return env, false, ok && skipSpace(b, end) == len(b)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return env, true, skipSpace(b, i+1) == len(b)
	}
	for {
		key, next, ok := readKey(b, i)
		if !ok {
			return env, true, false
		}
		start := next
		var end int
		switch string(key) {
		case "params":
			end, ok = env.readInner(b, start, &env.meta, &env.reqState, "_meta", "requestState")
			env.params = b[start:end]
		case "result":
			end, ok = env.readInner(b, start, &env.resultMeta, &env.resultType, "_meta", "resultType")
			env.result = b[start:end]
		default:
			end, ok = skipValue(b, start, 1)
			if ok {
				switch string(key) {
				case "id":
					env.id = b[start:end]
				case "method":
					env.method = b[start:end]
				case "error":
					env.error = b[start:end]
				}
			}
		}
		if !ok {
			return env, true, false
		}
		i = skipSpace(b, end)
		if i == len(b) {
			return env, true, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return env, true, skipSpace(b, i+1) == len(b)
		default:
			return env, true, false
		}
	}
}

// readInner reads the value of params or result at b[i:], recording the
// members named a and c of an object in *va and *vc, and returns where
// the value ends.
func (env *envelope) readInner(b []byte, i int, va, vc *[]byte, a, c string) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return skipValue(b, i, 1)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, next, ok := readKey(b, i)
		if !ok {
			return i, false
		}
		end, ok := skipValue(b, next, 2)
		if !ok {
			return end, false
		}
		switch string(key) {
		case a:
			*va = b[next:end]
		case c:
			*vc = b[next:end]
		}
		i = skipSpace(b, end)
		if i == len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// readKey reads a member name at b[i:] and the colon after it, and
// returns the name (its escapes decoded) and where its value starts.
func readKey(b []byte, i int) ([]byte, int, bool) {
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
	j := skipSpace(b, end)
	if j == len(b) || b[j] != ':' {
		return nil, j, false
	}
	return key, skipSpace(b, j+1), true
}

// decodeName decodes a member name with escapes; a name too long to be
// one the proxy reads decodes to nothing, as the Scanner's does.
func decodeName(quoted []byte) []byte {
	if len(quoted) > 130 {
		return nil
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil
	}
	return []byte(s)
}

// decodeJSONString returns the string a JSON string value decodes to, or
// "" when v is not a string. Invalid UTF-8 decodes to U+FFFD, as
// encoding/json decodes it.
func decodeJSONString(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1])
	}
	var s string
	json.Unmarshal(v, &s)
	return s
}

func skipSpace(b []byte, i int) int {
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

// skipValue checks the JSON value at b[i:], at depth containers deep, and
// returns where it ends. It is iterative: a value nested as deep as JSON
// allows costs a byte of stack per level, not a call.
func skipValue(b []byte, i, depth int) (int, bool) {
	var small [64]byte
	open := small[:0] // '{' or '[' for each container entered here
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth+len(open)+1 > maxDepth {
				return i, false
			}
			j := skipSpace(b, i+1)
			if j < len(b) && (c == '{' && b[j] == '}' || c == '[' && b[j] == ']') {
				i = j + 1
				break // an empty container: a whole value
			}
			open = append(open, c)
			if c == '{' {
				_, next, ok := readKey(b, j)
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
			i = skipSpace(b, i)
			if i == len(b) {
				return i, false
			}
			top := open[len(open)-1]
			if c := b[i]; c == ',' {
				i = skipSpace(b, i+1)
				if top == '{' {
					_, next, ok := readKey(b, i)
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

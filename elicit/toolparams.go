package elicit

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// readToolParams reads a tools/call's params as json.Unmarshal into
// toolParams reads them, and returns what it returns. The common params,
// an object whose keys are ASCII without escapes, whose name is a string
// without escapes, of valid UTF-8, and whose arguments are not null, are read in one scan
// without reflection; anything else is read by json.Unmarshal itself.
func readToolParams(raw []byte) (toolParams, error) {
	if tp, ok := scanToolParams(raw); ok {
		return tp, nil
	}
	var tp toolParams
	err := json.Unmarshal(raw, &tp)
	return tp, err
}

// scanToolParams is readToolParams' scan; ok is false when it leaves the
// params to json.Unmarshal. It gives what json.Unmarshal gives: keys are
// matched case-insensitively, the last member of a key wins, the name is
// the string's text and the arguments are a copy of the value's bytes.
func scanToolParams(raw []byte) (tp toolParams, ok bool) {
	if !json.Valid(raw) {
		return toolParams{}, false
	}
	i := skipWS(raw, 0)
	if raw[i] != '{' {
		return toolParams{}, false
	}
	i = skipWS(raw, i+1)
	if raw[i] == '}' {
		return tp, true
	}
	for {
		// raw is valid JSON: a key, a colon and a value follow.
		end := stringEnd(raw, i)
		key := raw[i+1 : end-1]
		for _, c := range key {
			if c == '\\' || c >= utf8.RuneSelf {
				return toolParams{}, false
			}
		}
		i = skipWS(raw, skipWS(raw, end)+1) // past the colon
		vend := valueEnd(raw, i)
		val := raw[i:vend]
		switch {
		case asciiFoldEqual(key, "name"):
			if val[0] != '"' {
				return toolParams{}, false // null or not a string: json.Unmarshal says
			}
			text := val[1 : len(val)-1]
			if bytes.IndexByte(text, '\\') >= 0 || !utf8.Valid(text) {
				return toolParams{}, false // json.Unmarshal decodes and replaces
			}
			name := string(text)
			tp.Name = &name
		case asciiFoldEqual(key, "arguments"):
			if val[0] == 'n' {
				return toolParams{}, false // null: json.Unmarshal says
			}
			tp.Arguments = append(json.RawMessage(nil), val...)
		}
		i = skipWS(raw, vend)
		if raw[i] == '}' {
			return tp, true
		}
		i = skipWS(raw, i+1) // past the comma
	}
}

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipWS(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string that starts at
// raw[i], a '"' of valid JSON.
func stringEnd(raw []byte, i int) int {
	for i++; raw[i] != '"'; i++ {
		if raw[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the index just past the value that starts at raw[i],
// in valid JSON.
func valueEnd(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch raw[i] {
			case '"':
				i = stringEnd(raw, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(raw) {
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// asciiFoldEqual says whether the ASCII key equals the lowercase name
// under ASCII case folding, as encoding/json matches an ASCII key to a
// field.
func asciiFoldEqual(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if lowerASCII(c) != name[i] {
			return false
		}
	}
	return true
}

package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// canonDepth bounds the nesting isCanonical follows; deeper arguments take
// the full reader, which applies MaxArgsDepth.
const canonDepth = 32

// isCanonical reports whether raw is a JSON object already written in
// the canonical form ArgsDigest hashes, so that hashing raw itself gives
// the digest: no whitespace, members in strictly increasing key order
// (so no key repeats), strings without escapes or control characters
// and of valid UTF-8, numbers that are integers of at most 18 digits
// (which any reader holds exactly). What an encoder such as encoding/json
// writes for a map mostly is. It never says true of arguments the full
// reader would refuse or write differently; when it says false, the full
// reader decides.
func isCanonical(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	s := canonScanner{s: raw}
	return s.value(0) && s.i == len(raw)
}

// canonScanner checks one value after another, from s[i].
type canonScanner struct {
	s []byte
	i int
}

func (s *canonScanner) value(depth int) bool {
	if depth >= canonDepth || s.i >= len(s.s) {
		return false
	}
	switch c := s.s[s.i]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.integer()
	}
	return false
}

func (s *canonScanner) word(w string) bool {
	if !bytes.HasPrefix(s.s[s.i:], []byte(w)) {
		return false
	}
	s.i += len(w)
	return true
}

// next reads ',' (more follows, true) or the closing byte (done, false);
// ok is false for anything else.
func (s *canonScanner) next(closing byte) (more, ok bool) {
	if s.i >= len(s.s) {
		return false, false
	}
	switch s.s[s.i] {
	case ',':
		s.i++
		return true, true
	case closing:
		s.i++
		return false, true
	}
	return false, false
}

func (s *canonScanner) object(depth int) bool {
	s.i++ // {
	if s.i < len(s.s) && s.s[s.i] == '}' {
		s.i++
		return true
	}
	var prev []byte
	for first := true; ; first = false {
		if s.i >= len(s.s) || s.s[s.i] != '"' {
			return false
		}
		k, ok := s.str()
		// Without escapes a key's bytes are its value, which the
		// canonical form orders by bytes.
		if !ok || !first && bytes.Compare(prev, k) >= 0 {
			return false
		}
		prev = k
		if s.i >= len(s.s) || s.s[s.i] != ':' {
			return false
		}
		s.i++
		if !s.value(depth + 1) {
			return false
		}
		more, ok := s.next('}')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

func (s *canonScanner) array(depth int) bool {
	s.i++ // [
	if s.i < len(s.s) && s.s[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth + 1) {
			return false
		}
		more, ok := s.next(']')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

// str reads a string without escapes and returns its bytes.
func (s *canonScanner) str() ([]byte, bool) {
	s.i++ // "
	start := s.i
	ascii := true
	for ; s.i < len(s.s); s.i++ {
		switch c := s.s[s.i]; {
		case c == '"':
			v := s.s[start:s.i]
			s.i++
			return v, ascii || utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// integer reads -?(0|[1-9][0-9]{0,17}) followed by no fraction or exponent.
func (s *canonScanner) integer() bool {
	if s.s[s.i] == '-' {
		s.i++
	}
	start := s.i
	for s.i < len(s.s) && '0' <= s.s[s.i] && s.s[s.i] <= '9' {
		s.i++
	}
	n := s.i - start
	if n == 0 || n > 18 || n > 1 && s.s[start] == '0' {
		return false
	}
	if s.i < len(s.s) {
		switch s.s[s.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	return true
}

// digestString is prefix followed by sum in lowercase hex.
func digestString(prefix string, sum [sha256.Size]byte) string {
	b := make([]byte, len(prefix)+hex.EncodedLen(len(sum)))
	copy(b, prefix)
	hex.Encode(b[len(prefix):], sum[:])
	return string(b)
}

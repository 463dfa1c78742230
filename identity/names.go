package identity

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/glob"
)

// MaxName bounds a name in bytes.
const MaxName = 128

// ValidName says why name cannot name an operator or a client, or nil.
// A name is 1 to MaxName characters of letters, digits and . _ @ + -,
// starting with a letter or a digit: what a login, an e-mail address or
// a single sign-on user name is, and never anything a log line or a
// terminal could read as structure. (So no name is ever "token holder" or
// "policy:…", which the record uses for the shared token and for rules.)
func ValidName(name string) error { return validWord("name", name, MaxName, "._@+-") }

// validWord says why s cannot be a word of kind what: 1 to max bytes of
// ASCII letters, digits and the bytes of extra, starting with a letter or
// a digit.
func validWord(what, s string, max int, extra string) error {
	switch {
	case s == "":
		return fmt.Errorf("the %s is empty", what)
	case len(s) > max:
		return fmt.Errorf("the %s is %d bytes; at most %d are allowed", what, len(s), max)
	case !alnum(s[0]):
		return fmt.Errorf("the %s starts with %s; start it with a letter or a digit", what, quoteByte(s[0]))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && strings.IndexByte(extra, c) < 0 {
			return fmt.Errorf("the %s holds %s at byte %d; use letters, digits and %s", what, quoteByte(c), i, strings.Join(strings.Split(extra, ""), " "))
		}
	}
	return nil
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// quoteByte shows one byte of a name that was refused, safely.
func quoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("the byte 0x%02x", c)
}

// Right is what an operator may do with the questions in its scope.
type Right uint8

// The rights, each including the ones before it.
const (
	// Read sees questions and their history, and answers nothing.
	Read Right = iota + 1
	// Answer also answers questions.
	Answer
)

// String is the right as the command line and the document write it.
func (r Right) String() string {
	switch r {
	case Read:
		return "read"
	case Answer:
		return "answer"
	}
	return "Right(" + strconv.Itoa(int(r)) + ")"
}

// ParseRight reads "read" or "answer".
func ParseRight(s string) (Right, error) {
	switch s {
	case "read":
		return Read, nil
	case "answer":
		return Answer, nil
	}
	return 0, fmt.Errorf("%q is not a right; want read or answer", s)
}

// MaxScope bounds the patterns of one scope.
const MaxScope = 64

// Scope is the MCP servers a record reaches, by the name a session shows
// (the subject of its questions), as globs. The zero Scope reaches every
// server.
type Scope struct {
	globs glob.List
}

// ParseScope compiles patterns: an empty list, or one that holds "*",
// reaches every server.
func ParseScope(patterns []string) (Scope, error) {
	if len(patterns) > MaxScope {
		return Scope{}, fmt.Errorf("the scope has %d patterns; at most %d are allowed", len(patterns), MaxScope)
	}
	var s Scope
	for _, p := range patterns {
		g, err := glob.Compile(p)
		if err != nil {
			return Scope{}, fmt.Errorf("server pattern %q: %w", p, err)
		}
		if p == "*" {
			return Scope{}, nil
		}
		s.globs = append(s.globs, g)
	}
	return s, nil
}

// All reports whether the scope reaches every server.
func (s Scope) All() bool { return len(s.globs) == 0 }

// Allows reports whether the scope reaches the server named server. No
// pattern but "*" reaches the empty name.
func (s Scope) Allows(server string) bool {
	if s.All() {
		return true
	}
	return server != "" && s.globs.Match(server)
}

// Patterns returns the scope as written: ["*"] for every server.
func (s Scope) Patterns() []string {
	if s.All() {
		return []string{"*"}
	}
	return s.globs.Strings()
}

// String is the scope for a person: its patterns, comma-separated.
func (s Scope) String() string { return strings.Join(s.Patterns(), ",") }

// MaxExpiry bounds how far ahead an expiry may be.
const MaxExpiry = 10 * 365 * 24 * time.Hour

// ParseExpiry reads when a record expires, counted from now: a duration
// ("12h", "90m"), a number of days ("30d"), or a date or a time in RFC
// 3339 ("2026-12-31", midnight UTC, or "2026-12-31T18:00:00+01:00"). It
// must lie ahead, and within MaxExpiry.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	var at time.Time
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		days, err := strconv.Atoi(n)
		if err != nil || days > int(MaxExpiry/(24*time.Hour)) {
			return time.Time{}, fmt.Errorf("expiry %q: at most %d days", s, int(MaxExpiry/(24*time.Hour)))
		}
		at = now.Add(time.Duration(days) * 24 * time.Hour)
	} else if d, err := time.ParseDuration(s); err == nil {
		at = now.Add(d)
	} else if t, err := time.Parse(time.RFC3339, s); err == nil {
		at = t
	} else if t, err := time.Parse(time.DateOnly, s); err == nil {
		at = t
	} else {
		return time.Time{}, fmt.Errorf("expiry %q: give a duration (12h), days (30d) or a date (2026-12-31)", s)
	}
	switch {
	case !at.After(now):
		return time.Time{}, fmt.Errorf("expiry %q is not in the future", s)
	case at.Sub(now) > MaxExpiry:
		return time.Time{}, fmt.Errorf("expiry %q is more than ten years ahead", s)
	}
	return at.UTC().Truncate(time.Second), nil
}

// Package glob is the name pattern of the bridge's configuration: the
// servers, tools and clients of an approval policy's rules, and the
// servers of an operator's or a client's scope. One syntax and one
// matcher for both, so a pattern means the same wherever it is written.
package glob

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLen bounds the length of one pattern in bytes.
const MaxLen = 1024

// A Glob is a compiled name pattern. The syntax is the shell's, with one
// difference from path.Match: a '*' matches any run of characters,
// including '/', because server and tool names are names, not paths.
//
//   - "*" is any run of characters, also none;
//   - "?" is one character;
//   - "[abc]" is one of a, b, c; "[a-z]" a range; "[!a-z]" or "[^a-z]" negated;
//   - "\x" is the character x itself ("\*", "\?", "\[", "\\").
//
// Matching is by Unicode code point and case-sensitive, as MCP compares
// tool names.
type Glob struct {
	src  string
	kind globKind
	// lit is the literal text of a globLiteral, globPrefix, globSuffix or
	// globContains pattern.
	lit string
	// toks are the tokens of a globGeneral pattern.
	toks []globTok
}

type globKind uint8

const (
	globAny      globKind = iota // *
	globLiteral                  // abc
	globPrefix                   // abc*
	globSuffix                   // *abc
	globContains                 // *abc*
	globGeneral                  // anything else
)

type globTokKind uint8

const (
	tokLit  globTokKind = iota // a literal run
	tokStar                    // *
	tokOne                     // ?
	tokSet                     // [...]
)

type globTok struct {
	kind globTokKind
	lit  string
	set  *runeSet
}

// runeSet is a bracket expression: ranges, possibly negated.
type runeSet struct {
	neg    bool
	ranges [][2]rune
}

func (s *runeSet) has(r rune) bool {
	in := false
	for _, rg := range s.ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
			break
		}
	}
	return in != s.neg
}

// Compile compiles a pattern, or says what is wrong with it.
func Compile(src string) (*Glob, error) {
	switch {
	case src == "":
		return nil, fmt.Errorf("the pattern is empty; write * to match every name")
	case len(src) > MaxLen:
		return nil, fmt.Errorf("the pattern is %d bytes, over the %d allowed", len(src), MaxLen)
	case !utf8.ValidString(src):
		return nil, fmt.Errorf("the pattern is not valid UTF-8")
	}
	var toks []globTok
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, globTok{kind: tokLit, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case '*':
			flush()
			if n := len(toks); n == 0 || toks[n-1].kind != tokStar {
				toks = append(toks, globTok{kind: tokStar})
			}
			i++
		case '?':
			flush()
			toks = append(toks, globTok{kind: tokOne})
			i++
		case '\\':
			if i+1 == len(src) {
				return nil, fmt.Errorf("the pattern ends in a lone \\; write \\\\ for a backslash")
			}
			r, n := utf8.DecodeRuneInString(src[i+1:])
			lit.WriteRune(r)
			i += 1 + n
		case '[':
			set, n, err := compileSet(src[i:])
			if err != nil {
				return nil, err
			}
			flush()
			toks = append(toks, globTok{kind: tokSet, set: set})
			i += n
		case ']':
			return nil, fmt.Errorf("the pattern has a ] with no [ before it; write \\] for the character itself")
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	return classify(src, toks), nil
}

// classify picks the fastest matcher that gives the same answers as toks.
func classify(src string, toks []globTok) *Glob {
	g := &Glob{src: src, kind: globGeneral, toks: toks}
	isLit := func(t globTok) bool { return t.kind == tokLit }
	isStar := func(t globTok) bool { return t.kind == tokStar }
	switch {
	case len(toks) == 1 && isStar(toks[0]):
		g.kind = globAny
	case len(toks) == 1 && isLit(toks[0]):
		g.kind, g.lit = globLiteral, toks[0].lit
	case len(toks) == 2 && isLit(toks[0]) && isStar(toks[1]):
		g.kind, g.lit = globPrefix, toks[0].lit
	case len(toks) == 2 && isStar(toks[0]) && isLit(toks[1]):
		g.kind, g.lit = globSuffix, toks[1].lit
	case len(toks) == 3 && isStar(toks[0]) && isLit(toks[1]) && isStar(toks[2]):
		g.kind, g.lit = globContains, toks[1].lit
	}
	if g.kind != globGeneral {
		g.toks = nil
	}
	return g
}

// compileSet compiles the bracket expression at the start of s and returns
// it with the bytes it took.
func compileSet(s string) (*runeSet, int, error) {
	set := &runeSet{}
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		set.neg = true
		i++
	}
	read := func() (rune, bool) {
		if i >= len(s) {
			return 0, false
		}
		if s[i] == '\\' {
			i++
			if i >= len(s) {
				return 0, false
			}
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		return r, true
	}
	for first := true; ; first = false {
		if i >= len(s) {
			return nil, 0, fmt.Errorf("the pattern has a [ with no ] after it; write \\[ for the character itself")
		}
		if s[i] == ']' {
			if first {
				return nil, 0, fmt.Errorf("the pattern has an empty []; list characters inside, like [abc]")
			}
			return set, i + 1, nil
		}
		lo, ok := read()
		if !ok {
			return nil, 0, fmt.Errorf("the pattern has a [ with no ] after it; write \\[ for the character itself")
		}
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			i++
			if hi, ok = read(); !ok {
				return nil, 0, fmt.Errorf("the pattern has a [ with no ] after it; write \\[ for the character itself")
			}
			if hi < lo {
				return nil, 0, fmt.Errorf("the pattern has the range %c-%c, which is backwards; write %c-%c", lo, hi, hi, lo)
			}
		}
		set.ranges = append(set.ranges, [2]rune{lo, hi})
	}
}

// Match reports whether name matches the pattern.
func (g *Glob) Match(name string) bool {
	switch g.kind {
	case globAny:
		return true
	case globLiteral:
		return name == g.lit
	case globPrefix:
		return strings.HasPrefix(name, g.lit)
	case globSuffix:
		return strings.HasSuffix(name, g.lit)
	case globContains:
		return strings.Contains(name, g.lit)
	}
	return matchToks(g.toks, name)
}

// matchToks matches with one backtrack point, the last star: each star
// absorbs one more character only when what follows it fails, so the cost
// is at most len(toks) × len(name).
func matchToks(toks []globTok, name string) bool {
	ti, ni := 0, 0
	starTi, starNi := -1, 0
	for {
		if ti < len(toks) {
			t := toks[ti]
			switch t.kind {
			case tokStar:
				starTi, starNi = ti, ni
				ti++
				continue
			case tokLit:
				if strings.HasPrefix(name[ni:], t.lit) {
					ti++
					ni += len(t.lit)
					continue
				}
			case tokOne, tokSet:
				if ni < len(name) {
					r, n := utf8.DecodeRuneInString(name[ni:])
					if t.kind == tokOne || t.set.has(r) {
						ti++
						ni += n
						continue
					}
				}
			}
		} else if ni == len(name) {
			return true
		}
		// Mismatch: let the last star take one more character.
		if starTi < 0 || starNi >= len(name) {
			return false
		}
		_, n := utf8.DecodeRuneInString(name[starNi:])
		starNi += n
		ti, ni = starTi+1, starNi
	}
}

// String returns the pattern as written.
func (g *Glob) String() string { return g.src }

// List is a list of patterns: a name matches when any pattern does.
type List []*Glob

// Match reports whether any pattern matches name. An empty list matches
// every name.
func (gs List) Match(name string) bool {
	if len(gs) == 0 {
		return true
	}
	for _, g := range gs {
		if g.Match(name) {
			return true
		}
	}
	return false
}

// Strings returns the patterns as written.
func (gs List) Strings() []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.src
	}
	return out
}

package translate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// MaxNumberDigits bounds the significant digits of a number the bridge
// reads exactly. An integer a double can hold has at most 309 digits; the
// bound keeps the exact arithmetic cheap whatever a peer sends.
const MaxNumberDigits = 1000

// Number is a JSON number kept exactly: Text is the number as it was
// written, and comparisons use its exact value, never a float64, so an
// integer of any size a JSON peer can read compares and travels unchanged.
type Number struct {
	Text json.Number
	val  *big.Rat
}

// numberProblem says why a value is not a number the bridge can pass on.
// It is a reason sentence for an InvalidAnswer and never quotes the value.
type numberProblem string

const (
	notANumber   numberProblem = "not a number"
	badGrammar   numberProblem = "must be written as a JSON number"
	tooManyDigit numberProblem = "must be a number of at most 1000 significant digits"
	tooLarge     numberProblem = "must be a number no larger than 1.7976931348623157e308 in magnitude, the largest a JSON peer can read"
	tooSmall     numberProblem = "must be 0 or a number no smaller than 5e-324 in magnitude; smaller numbers read as 0"
)

// exactNumber reads v as an exact number. v is a json.Number (what the
// control intake decodes), a float64 or float32 (generic decoders; their
// shortest round-tripping text is taken), or a Go integer. A number is
// accepted when a JSON peer reading it as a double gets a finite value
// that is 0 only when the number is 0.
func exactNumber(v any) (Number, numberProblem) {
	switch t := v.(type) {
	case json.Number:
		return parseNumber(string(t))
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return Number{}, tooLarge
		}
		return parseNumber(strconv.FormatFloat(t, 'g', -1, 64))
	case float32:
		return exactNumber(float64(t))
	case int:
		return parseNumber(strconv.FormatInt(int64(t), 10))
	case int64:
		return parseNumber(strconv.FormatInt(t, 10))
	case int32:
		return parseNumber(strconv.FormatInt(int64(t), 10))
	case uint:
		return parseNumber(strconv.FormatUint(uint64(t), 10))
	case uint64:
		return parseNumber(strconv.FormatUint(t, 10))
	case uint32:
		return parseNumber(strconv.FormatUint(uint64(t), 10))
	}
	return Number{}, notANumber
}

// parseNumber reads the text of a JSON number (RFC 8259 §6) exactly.
// Before any exact arithmetic it bounds the digits and checks the range
// with strconv, whose cost does not grow with the exponent, so a hostile
// "1e999999999" costs no more than "1".
func parseNumber(s string) (Number, numberProblem) {
	if !jsonNumberGrammar(s) {
		return Number{}, badGrammar
	}
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	neg := strings.HasPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	all := intPart + frac
	digits := strings.TrimLeft(all, "0")
	trailing := len(digits) - len(strings.TrimRight(digits, "0"))
	digits = digits[:len(digits)-trailing]
	if len(digits) > MaxNumberDigits {
		return Number{}, tooManyDigit
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return Number{}, tooLarge
	}
	val := new(big.Rat)
	if digits == "" {
		return Number{Text: json.Number(s), val: val}, ""
	}
	if f == 0 {
		return Number{}, tooSmall
	}
	// The value is digits × 10^e10; the range check above bounds e10 to a
	// few thousand, so the powers below stay small.
	e10 := int64(trailing - len(frac))
	if exp != "" {
		e, err := strconv.ParseInt(exp, 10, 32)
		if err != nil {
			return Number{}, tooLarge
		}
		e10 += e
	}
	num, _ := new(big.Int).SetString(digits, 10)
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(e10)), nil)
	if e10 >= 0 {
		val.SetInt(num.Mul(num, pow))
	} else {
		val.SetFrac(num, pow)
	}
	if neg {
		val.Neg(val)
	}
	return Number{Text: json.Number(s), val: val}, ""
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// jsonNumberGrammar reports whether s is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumberGrammar(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// IsInt reports whether the number is an integer: JSON Schema counts any
// number with a zero fractional part, so 1.0 and 1e18 are integers.
func (n Number) IsInt() bool { return n.val != nil && n.val.IsInt() }

// Cmp compares n and m exactly: -1, 0 or +1.
func (n Number) Cmp(m Number) int { return n.val.Cmp(m.val) }

// IntegerText is the canonical decimal digits of an integer's exact
// value: "1e18" → "1000000000000000000", "-0" → "0", "1.0" → "1". Servers
// decode integer fields into integer types, which read plain digits only.
func (n Number) IntegerText() json.Number {
	return json.Number(n.val.Num().String())
}

// multipleOf reports whether n is an integer multiple of m (m > 0).
func (n Number) multipleOf(m Number) bool {
	return new(big.Rat).Quo(n.val, m.val).IsInt()
}

// String writes the number for messages: an integer of up to 30 digits in
// plain digits, anything else as it was written.
func (n Number) String() string {
	if n.IsInt() {
		if t := n.IntegerText(); len(t) <= 30 {
			return string(t)
		}
	}
	return string(n.Text)
}

// schemaNumber reads a numeric schema keyword exactly.
func schemaNumber(raw json.RawMessage) (Number, error) {
	n, p := parseNumber(strings.TrimSpace(string(raw)))
	if p != "" {
		return Number{}, fmt.Errorf("%s", p)
	}
	return n, nil
}

// numberKeywords are the keywords of a number or integer property.
var numberKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}

// parseNumberBounds reads a number property's bounds exactly.
func parseNumberBounds(fld *Field, m *members, unsupported func(string) error) error {
	for _, k := range numberKeywords {
		raw, ok := m.vals[k]
		if !ok {
			continue
		}
		v, err := schemaNumber(raw)
		if err != nil {
			return unsupported(k + " " + err.Error())
		}
		switch k {
		case "minimum":
			fld.Minimum = &v
		case "maximum":
			fld.Maximum = &v
		case "exclusiveMinimum":
			fld.ExclusiveMinimum = &v
		case "exclusiveMaximum":
			fld.ExclusiveMaximum = &v
		case "multipleOf":
			if v.val.Sign() <= 0 {
				return unsupported("multipleOf must be greater than 0")
			}
			fld.MultipleOf = &v
		}
	}
	if fld.Minimum != nil && fld.Maximum != nil && fld.Minimum.Cmp(*fld.Maximum) > 0 {
		return unsupported("minimum is greater than maximum; no answer could satisfy it")
	}
	return nil
}

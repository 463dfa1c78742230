package translate

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The string formats MCP elicitation allows (client/elicitation:
// email, uri, date, date-time) are checked the way the strictest SDK that
// checks an answer does, so that an answer the bridge accepts is never
// refused by the server it goes to:
//
//   - the TypeScript SDK validates an accepted ElicitResult with ajv and
//     ajv-formats in "full" mode (server elicitInput, through its default
//     AjvJsonSchemaValidator), and refuses with -32602 what fails;
//   - go-sdk validates it with google/jsonschema-go (ServerSession.Elicit),
//     which records "format" and never checks it;
//   - mcp-go does not validate elicitation results.
//
// So each check here is ajv-formats' own (ajv-formats 3, formats.js),
// ported exactly: what both the TypeScript SDK and go-sdk accept, never
// wider than either. The differences from the RFCs are theirs: an email
// address is ASCII with a dotted domain (no IP literal, no local host
// name); a URI is RFC 3986 with ASCII hosts and at least one ":" or "/";
// a date-time takes "t" or "T" or any whitespace between date and time,
// "z" or "Z", an offset with or without its colon or minutes, and a leap
// second at 23:59:60 UTC.
//
// ajv-formats' patterns carry the i flag and no u flag. Go's (?i) also
// folds U+017F (ſ) to s and U+212A (K) to k, and JavaScript's non-Unicode
// case folding does not, so the ports spell both cases in their classes
// instead. formats_test.go checks the patterns against ajv-formats'
// sources and every case of testdata/formats.json against both SDKs.

// Building blocks of uriPattern, as ajv-formats writes them.
const (
	hexDigit  = `[0-9a-fA-F]`
	pctEnc    = `%` + hexDigit + `{2}`
	h16       = hexDigit + `{1,4}`
	decOctet  = `(?:25[0-5]|2[0-4]\d|[01]?\d\d?)`
	ipv4      = `(?:` + decOctet + `\.){3}` + decOctet
	subDelims = `!$&'()*+,;=`
	unreserv  = `a-zA-Z0-9\-._~`
	pchar     = `(?:[` + unreserv + subDelims + `:@]|` + pctEnc + `)`
	qchar     = `(?:[` + unreserv + subDelims + `:@/?]|` + pctEnc + `)`
	ipv6      = `(?:(?:(?:` + h16 + `:){6}|::(?:` + h16 + `:){5}|(?:` + h16 + `)?::(?:` + h16 + `:){4}|` +
		`(?:(?:` + h16 + `:){0,1}` + h16 + `)?::(?:` + h16 + `:){3}|(?:(?:` + h16 + `:){0,2}` + h16 + `)?::(?:` + h16 + `:){2}|` +
		`(?:(?:` + h16 + `:){0,3}` + h16 + `)?::` + h16 + `:|(?:(?:` + h16 + `:){0,4}` + h16 + `)?::)` +
		`(?:` + h16 + `:` + h16 + `|` + ipv4 + `)|(?:(?:` + h16 + `:){0,5}` + h16 + `)?::` + h16 + `|(?:(?:` + h16 + `:){0,6}` + h16 + `)?::)`
	ipvFuture = `[Vv]` + hexDigit + `+\.[` + unreserv + subDelims + `:]+`
	regName   = `(?:[` + unreserv + subDelims + `]|` + pctEnc + `)*`
	userinfo  = `(?:(?:[` + unreserv + subDelims + `:]|` + pctEnc + `)*@)?`
	authority = userinfo + `(?:\[(?:` + ipv6 + `|` + ipvFuture + `)\]|` + ipv4 + `|` + regName + `)(?::\d*)?`
)

// uriPattern is ajv-formats' URI with both cases spelled out.
const uriPattern = `^(?:[a-zA-Z][a-zA-Z0-9+\-.]*:)` +
	`(?:\/?\/` + authority + `(?:\/` + pchar + `*)*` +
	`|\/(?:` + pchar + `+(?:\/` + pchar + `*)*)?` +
	`|` + pchar + `+(?:\/` + pchar + `*)*)` +
	`(?:\?` + qchar + `*)?(?:#` + qchar + `*)?$`

// emailPattern is ajv-formats' email with both cases spelled out.
const emailPattern = "^[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+)*" +
	`@(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\.)+[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$`

var (
	uriRe   = regexp.MustCompile(uriPattern)
	emailRe = regexp.MustCompile(emailPattern)
	dateRe  = regexp.MustCompile(`^(\d\d\d\d)-(\d\d)-(\d\d)$`)
	timeRe  = regexp.MustCompile(`^(\d\d):(\d\d):(\d\d(?:\.\d+)?)([zZ]|([+-])(\d\d)(?::?(\d\d))?)?$`)
)

func validFormat(format, s string) bool {
	switch format {
	case "email":
		return emailRe.MatchString(s)
	case "uri":
		// ajv-formats: "optional protocol + required '.'", its words for
		// a ":" or "/" somewhere.
		return strings.ContainsAny(s, "/:") && uriRe.MatchString(s)
	case "date":
		return validDate(s)
	case "date-time":
		return validDateTime(s)
	}
	return true
}

// daysIn is the length of each month of a common year.
var daysIn = [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// validDate is RFC 3339 full-date: a real day of the proleptic Gregorian
// calendar, year 0000 to 9999.
func validDate(s string) bool {
	m := dateRe.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	year, _ := strconv.Atoi(m[1])
	month, _ := strconv.Atoi(m[2])
	day, _ := strconv.Atoi(m[3])
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	leap := year%4 == 0 && (year%100 != 0 || year%400 == 0)
	if month == 2 && leap {
		return day <= 29
	}
	return day <= daysIn[month]
}

// validDateTime is a date, one separator ("t", "T" or any character
// JavaScript's \s matches) and a time with its offset.
func validDateTime(s string) bool {
	sep, n := -1, 0
	for i, r := range s {
		if r == 't' || r == 'T' || jsSpace(r) {
			if n == 0 {
				sep = i
			}
			n++
		}
	}
	if n != 1 {
		return false
	}
	_, w := utf8.DecodeRuneInString(s[sep:])
	return validDate(s[:sep]) && validTime(s[sep+w:])
}

// validTime is RFC 3339 full-time (an offset is required). A leap second
// is taken only when it falls at 23:59 UTC.
func validTime(s string) bool {
	m := timeRe.FindStringSubmatch(s)
	if m == nil || m[4] == "" {
		return false
	}
	hr, _ := strconv.Atoi(m[1])
	mn, _ := strconv.Atoi(m[2])
	sec, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return false
	}
	sign := 1
	if m[5] == "-" {
		sign = -1
	}
	tzH, tzM := 0, 0
	if m[6] != "" {
		tzH, _ = strconv.Atoi(m[6])
	}
	if m[7] != "" {
		tzM, _ = strconv.Atoi(m[7])
	}
	if tzH > 23 || tzM > 59 {
		return false
	}
	if hr <= 23 && mn <= 59 && sec < 60 {
		return true
	}
	utcMin := mn - tzM*sign
	utcHr := hr - tzH*sign
	if utcMin < 0 {
		utcHr--
	}
	return (utcHr == 23 || utcHr == -1) && (utcMin == 59 || utcMin == -1) && sec < 61
}

// jsSpace reports whether JavaScript's \s matches r (ECMA-262
// WhiteSpace and LineTerminator).
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

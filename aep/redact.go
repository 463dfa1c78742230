package aep

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Redaction markers (AEP-0003 §9.4).
const (
	RedactedSecret = "[REDACTED:secret]"
	RedactedPII    = "[REDACTED:pii]"
)

// RedactOptions configures a Redactor. The zero value applies the normative
// minimum with PII redaction on and no operator-specific secrets or home.
type RedactOptions struct {
	// Secrets are literal values the operator declares secret, for example
	// the values of environment variables named in the configuration
	// (rule b). Values shorter than 4 bytes are ignored: they would
	// shred ordinary text.
	Secrets []string
	// Home is the operator's home directory, replaced with "~" (rule c).
	// Empty means only the generic /home/<user> and /Users/<user> forms.
	Home string
	// DisablePII turns rule d (emails, phone numbers) off.
	DisablePII bool
}

// Redactor applies the AEP-0003 §9.4 pipeline, in order: (a) secrets and
// credentials, (b) operator-configured secret values, (c) home paths, (d) PII.
// It redacts more than the normative floor where a shape is unambiguously a
// credential (provider token prefixes). A Redactor is immutable and safe for
// concurrent use.
type Redactor struct {
	secrets []string
	homeRe  *regexp.Regexp
	pii     bool
}

// NewRedactor builds a Redactor from opts.
func NewRedactor(opts RedactOptions) *Redactor {
	r := &Redactor{pii: !opts.DisablePII}
	for _, s := range opts.Secrets {
		if len(s) >= 4 {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	home := strings.TrimRight(opts.Home, "/")
	if home != "" && home != "/" {
		r.homeRe = regexp.MustCompile(regexp.QuoteMeta(home) + `(/|\b|$)`)
	}
	return r
}

var (
	// Rule (a): credential shapes.
	pemRe = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*-----[\s\S]*?(?:-----END [A-Z0-9 ]*-----|$)`)
	// key=value / key: value / "key": "value" assignments of credential names.
	assignRe = regexp.MustCompile(`(?i)([A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|token)"?'?\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"',;&|)}\]]+)`)
	bearerRe = regexp.MustCompile(`(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9\-._~+/]{8,}=*)`)
	tokenRes = []*regexp.Regexp{
		regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
		regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`),
		regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}\b`),
		regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
		regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`),
		regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`),
		regexp.MustCompile(`\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}`),
		regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}`),
		regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`),
		regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`),
	}
	// Rule (c): home directories of any user.
	homeDirRe = regexp.MustCompile(`(?:/home|/Users)/[A-Za-z0-9._-]+`)
	// Rule (d): PII.
	emailRe = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	phoneRe = regexp.MustCompile(`(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\d{3})[\s.-]?\d{3}[\s.-]?\d{4}\b`)
	// Credential-named object keys (value cases): the value is dropped
	// whatever it looks like.
	secretKeyRe = regexp.MustCompile(`(?i)^(?:.*[_-])?(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|authorization|auth[_-]?token|credentials?|cookie|session[_-]?token)$`)
)

// Text redacts one free-text string.
func (r *Redactor) Text(s string) string {
	if s == "" {
		return s
	}
	// (a) secrets first, so a credential that contains an email or a path
	// is replaced whole.
	s = pemRe.ReplaceAllString(s, RedactedSecret)
	s = bearerRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := bearerRe.FindStringSubmatch(m)
		if !hasDigit(sub[3]) && !strings.EqualFold(sub[1], "bearer") {
			return m
		}
		if strings.EqualFold(sub[1], "bearer") && !hasDigit(sub[3]) && len(sub[3]) < 16 {
			return m // "the bearer of good news"
		}
		return sub[1] + sub[2] + RedactedSecret
	})
	s = assignRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := assignRe.FindStringSubmatch(m)
		if sub[2] == RedactedSecret || strings.HasPrefix(sub[2], "[REDACTED") {
			return m
		}
		return sub[1] + RedactedSecret
	})
	for _, re := range tokenRes {
		s = re.ReplaceAllString(s, RedactedSecret)
	}
	// (b) operator-declared secret values.
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, RedactedSecret)
	}
	// (c) home paths.
	if r.homeRe != nil {
		s = r.homeRe.ReplaceAllString(s, "~$1")
	}
	s = homeDirRe.ReplaceAllString(s, "~")
	// (d) PII.
	if r.pii {
		s = emailRe.ReplaceAllString(s, RedactedPII)
		s = phoneRe.ReplaceAllString(s, RedactedPII)
	}
	return s
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// Value redacts every string inside a decoded JSON value. Values under a
// credential-named key are replaced whole, whatever their type; numbers,
// booleans and null pass unchanged. Object keys are structural and kept.
func (r *Redactor) Value(v any) any {
	switch t := v.(type) {
	case string:
		return r.Text(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, mv := range t {
			if secretKeyRe.MatchString(k) && mv != nil {
				out[k] = RedactedSecret
				continue
			}
			out[k] = r.Value(mv)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, it := range t {
			out[i] = r.Value(it)
		}
		return out
	}
	return v
}

// IsCredentialName reports whether a name or title (a form field's key or
// label) names a credential in the vocabulary of the §9.4 pipeline:
// password (passwd, pwd, pass), passphrase, passcode, passkey, secret,
// token (JWT, bearer), API key, private key (and access, signing,
// encryption, SSH and license keys), PIN, credentials, cookies, seed
// phrases and mnemonics, and one-time codes (OTP, TOTP, MFA or 2FA code,
// verification, recovery, backup, auth, SMS and security codes).
//
// It matches whole words, so "spinner", "shipping" and "tokenizer" are not
// credentials, while "userPIN", "db_pass", "X-API-Key" and "githubToken"
// are. A name that ends in a word about the credential rather than the
// credential itself ("token_count", "password length", "api key name",
// "token URL") is not one. Words glued together in lower case are found
// for the unambiguous compounds only ("newpassword", "apikey").
func IsCredentialName(s string) bool {
	words := nameWords(s)
	if len(words) == 0 {
		return false
	}
	if len(words) > 1 && aboutWords[words[len(words)-1]] {
		return false
	}
	for i, w := range words {
		if credentialWords[w] {
			return true
		}
		for _, c := range credentialCompounds {
			if strings.Contains(w, c) {
				return true
			}
		}
		if i+1 < len(words) && credentialPairs[w+" "+words[i+1]] {
			return true
		}
		if i+2 < len(words) && w == "one" && words[i+1] == "time" && (words[i+2] == "code" || words[i+2] == "pin") {
			return true
		}
	}
	return false
}

var (
	credentialWords = wordSet("password", "passwd", "pwd", "pass", "passphrase", "passcode", "passkey", "secret", "secrets",
		"token", "jwt", "bearer", "cookie", "cookies", "mnemonic", "pin", "apikey", "privatekey", "credential", "credentials",
		"otp", "totp", "hotp")
	// credentialCompounds are found inside a word: no ordinary word
	// contains them.
	credentialCompounds = []string{"password", "passwd", "passphrase", "passcode", "apikey", "privatekey",
		"accesstoken", "authtoken", "refreshtoken", "secretkey"}
	credentialPairs = wordSet("api key", "private key", "access key", "signing key", "encryption key", "ssh key",
		"license key", "licence key", "seed phrase", "recovery phrase", "mfa code", "2fa code", "verification code",
		"onetime code", "onetime pin", "recovery code", "recovery codes", "backup code", "backup codes", "auth code",
		"authorization code", "sms code", "security code")
	// aboutWords, last in a name, make it name something about a
	// credential: its size, kind, name or location.
	aboutWords = wordSet("count", "counts", "length", "len", "limit", "limits", "size", "total", "budget",
		"usage", "used", "type", "kind", "policy", "hint", "expiry", "expires", "expiration", "ttl", "strength",
		"format", "name", "label", "id", "ids", "description", "url", "uri", "endpoint", "path", "file")
)

func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// nameWords splits a key or title into lower-case words at every
// character that is not a letter or digit and at camelCase boundaries
// ("userPIN" → user pin, "APIKey" → api key).
func nameWords(s string) []string {
	var words []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			words = append(words, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return words
}

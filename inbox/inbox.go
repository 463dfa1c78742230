package inbox

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"strings"
)

//go:embed page.html style.css check.js fields.js notify.js app.js
var files embed.FS

// scripts are the page's scripts, in the order they run: each one after
// the ones it uses.
var scripts = []string{"check.js", "fields.js", "notify.js", "app.js"}

// page is the assembled page and csp its Content-Security-Policy.
var page, csp = assemble()

// Script is the page's script: its scripts joined in order. Tests and
// tools load it to reach the page's rules.
var Script = joined()

func joined() string {
	parts := make([]string, len(scripts))
	for i, name := range scripts {
		parts[i] = read(name)
	}
	return strings.Join(parts, "\n")
}

func read(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("inbox: " + name + " is not embedded: " + err.Error()) // a build defect, not input
	}
	return string(b)
}

// assemble puts the style and script into the page and allows exactly them
// by their SHA-256 hashes.
func assemble() ([]byte, string) {
	style := read("style.css")
	script := joined()
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	html := strings.Replace(read("page.html"), "{{style}}", style, 1)
	html = strings.Replace(html, "{{script}}", script, 1)
	policy := "default-src 'none'; script-src " + hash(script) + "; style-src " + hash(style) +
		"; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return []byte(html), policy
}

// Handler serves the inbox page.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", csp)
		w.Write(page)
	})
}

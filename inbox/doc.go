// Package inbox is the operators' web inbox: one page, embedded in the
// binary, that works offline (no CDN, no build step). Opened at / of the AEP
// endpoint with the token in the URL fragment, it subscribes over /socket to
// attention.* and control.* with replay-all, shows each pending question as
// a card with a form rendered from its field specs, and answers with
// control.attention.respond.
//
// The page itself carries no data, so it is served without the token; every
// event it shows comes over the authenticated socket. Server text is shown as
// quoted, untrusted content and is only ever inserted as text, never as
// markup (AEP-0002 §8).
package inbox

import (
	_ "embed"
	"net/http"
)

//go:embed index.html
var page []byte

// Handler serves the inbox page.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self' ws: wss:; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		w.Write(page)
	})
}

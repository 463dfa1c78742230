// Package inbox is the operators' web inbox: one page, embedded in the
// binary, that works offline (no CDN, no build step). Opened at / of the AEP
// endpoint with the token in the URL fragment, which it takes out of the
// address bar and keeps for the tab only (sessionStorage), it subscribes
// over /socket to attention.*, control.* and session.started (each
// session's MCP client) with replay-all, keeps every open question, shows
// them a page at a time as cards with a form built from each question's
// field specs, and answers with control.attention.respond. A refusal whose
// detail names a field is shown at that field; when the endpoint no longer
// answers at all, the page says the bridge has stopped. The tab title
// counts the open questions; while the tab is in the background, each
// question that opens after the page has caught up with what was open when
// it connected raises a system notification, once the operator has turned
// them on.
//
// The page is assembled from page.html, style.css and four scripts:
// check.js holds the bridge's answer rules (package translate) for what a
// field spec carries, with the bridge's wording, so the page refuses what
// the bridge would refuse as the operator types; fields.js builds one
// control per field, keeps the room for its error, and holds layout changes
// while a mouse button is down; notify.js holds the "Notify me" box and
// the notifications, which ask for the browser's permission only when the
// box is checked and show only what a question's event carries, as plain
// text; app.js is the rest. The
// Content-Security-Policy allows exactly that script and style by their
// hashes, and nothing inline besides.
//
// The page itself carries no data, so it is served without the token; every
// event it shows comes over the authenticated socket. Server text is shown as
// quoted, untrusted content and is only ever inserted as text, never as
// markup (AEP-0002 §8); a URL question's address is shown as text, and only
// an http(s) one becomes a link.
package inbox

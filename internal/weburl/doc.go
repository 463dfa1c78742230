// Package weburl decides which URLs the bridge will use toward people and
// their services: the URL-mode elicitation URLs it puts to operators, and
// the webhook URLs it notifies. Both follow one rule: https, or plain http
// only to a loopback host. It also says what of a URL may be shown in a
// log or an error: the scheme and the host, never the user info, path or
// query, which often carry a secret (a one-time code, a webhook token).
package weburl

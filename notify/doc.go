// Package notify tells people about questions where they already are: it
// POSTs a notification to webhooks (a generic signed JSON body, or bodies
// that Slack and Discord incoming webhooks, Microsoft Teams workflows and
// ntfy take as they are) when a question or permission request opens, is
// answered, declined or cancelled, times out or is withdrawn, and again a
// while before it expires unanswered.
//
// Where it sits: a Notifier is a consumer of the bus like any other. It
// subscribes to its process's hub (so on the hub process it sees the
// questions of every joined bridge and ingested emitter too), and each
// target renders what it is sent at its own capture ceiling
// (aep.Downlevel, AEP-0001 §8.2), default metadata. Nothing flows back:
// it imports bus and aep, and no stage of the question's path waits for
// it.
//
// It can never slow a question down:
//   - the hub hands it events without blocking (bus.Hub); its one reader
//     goroutine only files each event into per-target queues;
//   - each target has a bounded queue and one sender goroutine; a full
//     queue drops its oldest notification, counted and logged;
//   - each request has its own timeout; 5xx, 429 and network errors are
//     retried with jittered exponential backoff (Retry-After honoured, in
//     seconds or as an HTTP date), other 4xx are not, and redirects are
//     never followed.
//
// What never leaves: secret fields (their values never reach the bus;
// their labels and defaults are not sent), the bridge's token, and every
// string goes through the AEP-0003 §9.4 redaction pipeline whatever the
// target's ceiling. A target's URL and secret are never logged: logs name
// a target by its name, or by its URL's scheme and host (weburl.Display).
//
// Generic JSON bodies are signed: X-AEP-Signature carries t=<unix
// seconds>,v1=<hex HMAC-SHA256 over "<t>." + body> with the target's
// secret (Sign, Verify), so a receiver can check who sent a body and
// refuse one whose timestamp is older than five minutes.
package notify

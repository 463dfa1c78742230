// Package bridge wires a running bridge. A Host owns the process-wide
// parts: the event hub, the AEP endpoint and its HTTP server (with header,
// body and idle timeouts), or the join of another bridge's endpoint on the
// same port once it proved the token (package relay, package proof), and
// the links to relays, each checked before it may carry the token.
// A Bridge is one bridged MCP session on a host: it spawns or dials the
// upstream server (package upstream), relays it to the client through the
// elicit proxy, and connects the proxy to the attention lifecycle, the
// control intake and the bus (session emitter, JSONL log). The client is
// this process's stdio, or any ClientConn (Options.ClientConn): the
// gateway gives each HTTP client session one, and, as a RelatedWriter, is
// told which client request each message of a remote upstream relates to,
// so it can answer on that request's response stream.
//
// It owns the shutdown order. When a session ends (the client leaves, its
// context is cancelled, or its host closes): pending questions are
// dismissed, session.ended is written, the log is flushed, then the server
// is stopped (its stdin closed, then SIGTERM, then SIGKILL). When the
// server dies instead, pending questions are dismissed, in-flight client
// requests get errors that name the exit status, and Run returns an error.
// Host.Close ends the sessions still running first, then stops the
// endpoint, then lets the links send what they queued.
package bridge

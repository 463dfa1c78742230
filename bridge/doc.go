// Package bridge wires one bridged MCP session: it spawns the upstream MCP
// server, relays it to the client through the elicit proxy, and connects the
// proxy to the attention lifecycle, the control intake and the bus (session
// emitter, JSONL log, hub).
//
// It owns the shutdown order: on a signal or when the client leaves, stop
// accepting, dismiss pending questions, write session.ended, flush the log,
// then stop the server (close its stdin, then SIGTERM, then SIGKILL). When
// the server dies instead, pending questions are dismissed, in-flight client
// requests get errors that name the exit status, and Run returns an error.
package bridge

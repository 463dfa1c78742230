// Package upstream holds the bridge's side of the upstream MCP server: a
// spawned stdio process (Process), or a remote server over streamable
// HTTP (MCP 2025-03-26 and later) or the legacy HTTP+SSE transport
// (2024-11-05) (Conn). A Conn is a stream of raw JSON-RPC messages
// (elicit.Conn), so the proxy treats a remote server exactly as a spawned
// one.
//
// The remote transports are the bridge's own because a human's answer
// must reach the server whenever it is given: a response to a server's
// elicitation/create is POSTed when the operator answers, bounded only by
// the bridge's --timeout, never by a transport's own request timeout.
//
// One file per concern:
//   - process.go: a spawned server, its exit status, and its stop (stdin
//     closed, then SIGTERM, then SIGKILL, to its process group);
//   - conn.go: the Conn, its options, the order of POSTs (each one waits
//     until the server acknowledged the one before it: its 202 or the
//     start of its response, bounded by AckWait), DELETE on Close;
//   - post.go: a streamable POST and its answer (202, JSON, an event
//     stream, or an error status), the session id and protocol version an
//     initialize answer sets, and the fall-back to HTTP+SSE;
//   - stream.go: event streams, a POST's and the standing GET stream, and
//     their resumption with Last-Event-ID (a POST's stream for as long as
//     the server serves it, until its response, Close or the client's
//     cancellation; the GET stream until Close or a 405);
//   - reconnect.go: the pacing of every resumption and reopening: the
//     retry the server set last, a jittered exponential backoff when it
//     set none and after failures, at most one reopening per interval,
//     every wait ended by Close;
//   - legacy.go: the HTTP+SSE transport's stream and endpoint POSTs;
//   - modern.go: the request metadata of MCP 2026-07-28
//     (MCP-Protocol-Version from the body's _meta, Mcp-Method, Mcp-Name,
//     and Mcp-Param-* from x-mcp-header annotations, Base64 where a value
//     is not header-safe), tools/list without the tools whose annotations
//     break the rules, cancellation by closing a request's response
//     stream, and a server's own JSON-RPC error in an error status passed
//     to the client as it is;
//   - body.go: messages of any size: a client message the proxy streams
//     is POSTed as a streamed body (Frame.Rest), a JSON response or an
//     event over 4 MiB reaches the proxy as a stream (Frame.Rest), neither
//     held whole, except a 2026-07-28 request, whose headers mirror its
//     body: it is read whole up to MaxWholeMessage (16 MiB) and refused
//     past it; and every message reaches the proxy as one line;
//   - errors.go: typed errors (*HTTPStatusError, ErrUnauthorized) and the
//     advice a failed request carries (DNS, TLS, connection refused),
//     chosen with errors.As on the cause, never on its text.
//
// Every event stream is read by internal/sse, which follows the WHATWG
// HTML event-stream rules (CR, LF and CRLF line ends, the last event ID
// persisting across events, the retry field) and hands an event whose
// data is over DefaultMaxMessage over as a stream, so no event size
// breaks a response.
//
// Messages read from a POST's response stream come with the id of the
// request it answers (Frame.Related), so the proxy knows which request a
// server's question belongs to.
//
// Spec sections: MCP basic/transports (stdio; streamable HTTP: POST with Accept,
// JSON and SSE responses, Mcp-Session-Id, MCP-Protocol-Version, the GET
// stream, resumability and redelivery with Last-Event-ID, DELETE; and the
// backwards compatibility section for HTTP+SSE servers); MCP 2026-07-28
// basic/transports/streamable-http (Request Metadata, Value Encoding,
// Server Validation, Cancellation, Backward Compatibility).
package upstream

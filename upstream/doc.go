// Package upstream holds the bridge's client transports to remote MCP
// servers: streamable HTTP (MCP 2025-03-26 and later) and the legacy
// HTTP+SSE transport (2024-11-05). Each is a stream of raw JSON-RPC
// messages (elicit.Conn), so the proxy treats a remote server exactly as a
// spawned one.
//
// They exist because a human's answer must reach the server whenever it is
// given: a response to a server's elicitation/create is POSTed when the
// operator answers, bounded only by the bridge's --timeout, never by a
// transport's own request timeout.
//
// Spec sections: MCP basic/transports (streamable HTTP: POST with Accept,
// JSON and SSE responses, Mcp-Session-Id, MCP-Protocol-Version, the GET
// stream, resumption with Last-Event-ID, DELETE; and the backwards
// compatibility section for HTTP+SSE servers).
package upstream

// Package mcpconformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in internal/testpeers/conformance
// at a 0.1 release and at the newest 0.2.0 pre-release, with the Node 22 it
// needs) against reference peers nobody here wrote, directly and with the
// bridge in their path, and fails when the bridge changes a verdict.
//
// The reference peers are the official Go SDK's own conformance programs
// (go-sdk's conformance/everything-server and everything-client, at the
// go-sdk version go.mod pins), built by the tests with two additions that
// change no scenario: the server reports the address it listens on, so it
// can take port 0, and the client can speak stdio to a command instead of
// streamable HTTP to a URL (testdata/overlay).
//
// Server scenarios (the suite is the client) run against the reference
// server directly, through `aep-mcp-bridge serve -- SERVER` (a stdio
// upstream) and through `aep-mcp-bridge serve --url URL` (an HTTP
// upstream). Client scenarios (the suite is the server) run with the
// reference client directly, through `aep-mcp-bridge --url URL` (the
// client speaks stdio to the bridge) and through `serve --url URL`. Each
// bridged path runs under --route client and --route both; the
// elicitation scenarios also run under --route remote, answered by an
// operator with the real `tail` and `respond` commands.
//
// The package holds only tests; `go test ./internal/mcpconformance -v`
// prints the scenario × path tables.
package mcpconformance

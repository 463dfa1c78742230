// Package jsonrpc is the JSON-RPC 2.0 vocabulary the bridge's proxy
// (elicit) and its remote transports (upstream) share: the Frame a
// message crosses a connection in, id keys, the error codes the bridge
// answers with, error responses, the envelope Scanner that reads a
// message's id, method and kind from its bytes as they pass, so a message
// of any size can be relayed as a stream in bounded memory, and ReadWhole
// and Valid, which read a message held whole in the one pass that checks
// it is JSON.
//
// It is internal: it carries no MCP semantics, only JSON-RPC framing.
//
// Spec sections: JSON-RPC 2.0 §4 (request objects, ids), §5 (response
// objects), §5.1 (error codes); RFC 8259 (JSON text), which the Scanner
// tokenizes and ReadWhole checks; MCP basic/transports (stdio: one message per line).
package jsonrpc

// Package elicit is the bridge's MCP proxy: it relays raw JSON-RPC messages
// between an MCP client and an MCP server, reading only each message's
// envelope (id, method, result/error), and intercepts what the bridge has a
// reason to touch:
//   - the client's initialize, to declare the elicitation capability so the
//     server asks even when the client cannot answer;
//   - the server's elicitation/create requests, which become attention
//     requests an operator answers;
//   - the client's responses to the copies of those questions it was given,
//     and the server's notifications/cancelled for them.
//
// Everything else passes through byte for byte and in order, in both
// directions, in every protocol revision. While a question waits, every
// in-flight client request that carries a progressToken receives
// notifications/progress, so the client's own request timeout does not kill
// a question a human is still reading.
//
// It is the first stage of the outbound flow (elicit → translate →
// attention → bus) and the last of the return flow.
//
// Spec sections: MCP 2025-06-18 / 2025-11-25 basic/lifecycle (capability
// negotiation), basic/utilities/cancellation and progress, client/elicitation.
package elicit

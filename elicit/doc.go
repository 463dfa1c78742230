// Package elicit is the bridge's MCP proxy: it relays raw JSON-RPC messages
// between an MCP client and an MCP server, reading only each message's
// envelope (id, method, result/error), and intercepts what the bridge has a
// reason to touch:
//   - the client's initialize, and the per-request _meta client
//     capabilities of MCP 2026-07-28, to declare elicitation so the server
//     asks even when the client cannot answer;
//   - the server's elicitation/create requests, form and URL mode, which
//     become attention requests an operator answers;
//   - -32042 URLElicitationRequired errors and
//     notifications/elicitation/complete;
//   - input_required results (MCP 2026-07-28 multi round-trip requests),
//     which the bridge answers and retries upstream under ids of its own;
//   - the client's responses to the copies of questions it was given, and
//     notifications/cancelled from either side;
//   - who is on each side: initialize's clientInfo and serverInfo, or the
//     io.modelcontextprotocol/clientInfo and serverInfo _meta of
//     2026-07-28 requests and results (server/discover's among them);
//   - the end of a request, which ends the questions it asked where the
//     link is known (an elicitation on its response stream over HTTP, a
//     multi round-trip round): dismissed, and the server gets cancel.
//
// Every answer is recorded, the one that lost a race too (the client and
// operators both answer under route both): the bus shows the winner's
// attention.answered and the loser's x.aep-mcp-bridge.attention.outraced.
// A URL-mode question is raised only for an https URL, or http to a
// loopback host; any other scheme is refused back to the server.
//
// Everything else passes through byte for byte and in order, in both
// directions, in every protocol revision, whatever its size: a message
// over the size a Conn reads whole (4 MiB on stdio), or nested deeper than
// encoding/json decodes, is relayed as a stream in bounded memory, its
// envelope read by internal/jsonrpc's Scanner as the bytes pass (see
// stream.go). What the bridge must read whole and cannot is refused with
// a JSON-RPC error under the message's own id. A message read whole is
// read once, by jsonrpc.ReadWhole, in the pass that checks it is JSON: for
// a message it does not act on the proxy does that pass and the write,
// and allocates nothing. While a question waits, every
// in-flight client request that carries a progressToken receives
// notifications/progress, so the client's own request timeout does not kill
// a question a human is still reading.
//
// Neither peer is trusted to finish what it starts. Each per-request table
// of a Proxy (client requests awaiting the server and their progress
// tokens, questions pending and their elicitationIds, withdrawn copies,
// multi round-trip exchanges and retries) holds at most 1024 entries:
// past that the oldest is forgotten with a log line that names no content,
// and what waited on it is answered (the client's request gets an error
// that says the bridge stopped waiting, the server gets cancel). A
// question the attention lifecycle refuses at one of its limits goes to
// the client alone when the client can elicit and the route lets it;
// otherwise the server gets an error that names the limit. Such refusals
// are logged sparsely, so a peer cannot flood the log.
//
// A response is relayed only when the proxy can place its id, never as a
// second answer to a request that already got one: the client's late
// answer to a question withdrawn from it, the server's late response to a
// request the bridge stopped waiting for (whose client got an error), a
// response to a retry of the bridge's own it no longer tracks. Those are
// dropped, logged without content. Forgetting a table entry would make its
// late response look like one to a request the proxy never tracked, which
// it relays (sampling, roots and ping pass untracked). So the ids of the
// forgotten entries are kept as tombstones, with a far larger bound (64
// times, 65536 ids a direction): 8 bytes each, a 64-bit hash of the id
// under a per-proxy random seed, so a peer can neither make one large nor
// choose ids that collide with a live one. A peer that sends a new request
// under a tombstoned id revives it. Renaming every server request under
// ids of the bridge's own would place every response without a bound,
// but only by tracking every server request and rewriting every response
// the client sends, where the proxy otherwise relays both byte for byte;
// the bridge's own retries carry recognisable ids, so a stale response to
// one is known without a tombstone.
//
// It is the first stage of the outbound flow (elicit → translate →
// attention → bus) and the last of the return flow. It reaches the
// attention lifecycle only through [Lifecycle], two small role interfaces
// that *attention.Manager implements: an [Asker] raises questions, a
// [Settler] settles them from the MCP side; resolutions come back through
// each question's Deliver callback. The package never imports the bus.
//
// Each side is a [Conn], as go-sdk's Connection: Read(ctx) and
// Write(ctx) of [Frame]s, which carry a message whole or as a head and a
// stream, the request a server message relates to, and whether more
// input is already buffered (a burst read in one system call is written
// in one). Every exchange a peer must finish is a bounded table entry
// with a state of its own (questionState, roundState); a third kind of
// held exchange (a tools/call held for approval) is one more table and
// state beside them, answered through later as the others are.
//
// A [Proxy] lives New → Run → Close. Run returns when a peer goes away,
// with both streams still open so the caller can settle questions and fail
// in-flight requests in its shutdown order; Close closes the streams and
// waits for every goroutine Run started.
//
// Files, one concern each:
//   - proxy.go: Options, the Proxy and its lifetime, the reader loops;
//   - route.go: parsing messages and batches, and dispatching each one;
//   - stream.go: messages relayed as streams, and what is refused;
//   - capabilities.go: declaring elicitation (initialize and _meta);
//   - questions.go: form elicitation, the race between the client and
//     operators, server cancellation;
//   - url.go: URL mode, the URLs it accepts, its completion notification
//     and -32042;
//   - identity.go: the names of the client and the server, in every
//     revision;
//   - related.go: the end of a request ends its questions
//     (Frame.Related);
//   - mrtr.go, mrtr_client.go: multi round-trip exchanges, and the
//     client's own copy of one;
//   - keepalive.go: progress while questions wait;
//   - table.go: the bounded table each kind of exchange is tracked in;
//   - stale.go: late responses to what the tables forgot (tombstones);
//   - refused.go: questions refused at the lifecycle's limits;
//   - lifecycle.go: the seam to the attention lifecycle;
//   - conn.go: Conn and Frame, and the newline-delimited stdio framing;
//   - jsonrpc.go: the envelope and encoders, over internal/jsonrpc's ids
//     and error codes, with the protocol vocabulary taken from mcp-go.
//
// Its behaviour is pinned message by message by the scripted exchanges in
// testdata/exchanges (see the README there).
//
// Spec sections: MCP 2025-06-18 / 2025-11-25 basic/lifecycle (capability
// negotiation), basic/utilities/cancellation and progress,
// client/elicitation (form and URL mode, URLElicitationRequiredError);
// MCP 2026-07-28 basic/patterns/mrtr (multi round-trip requests) and the
// per-request _meta client capabilities.
package elicit

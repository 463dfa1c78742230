// Package gateway serves MCP clients over HTTP and gives each client
// session a bridge session of its own (package bridge): its own upstream
// server (a spawned command, or a remote one with --url), its own AEP
// session, JSONL log and pending questions, all on one bridge Host, so one
// AEP endpoint and inbox shows every session's questions. It is the
// `aep-mcp-bridge serve` command.
//
// Transports (MCP basic/transports):
//   - Streamable HTTP at /mcp, MCP 2025-03-26 to 2025-11-25: initialize
//     opens a session whose Mcp-Session-Id every later request carries;
//     POST takes one message or a batch and answers 202 for notifications
//     and responses, or, for requests, one JSON body when the response is
//     the first message for them and comes within StreamAfter, otherwise
//     an event stream that opens with a priming event;
//     GET opens the session's standing stream; DELETE ends the session.
//     A request of a session whose MCP-Protocol-Version is not the version
//     it negotiated gets 400.
//   - Resumability: events of a session's streams carry ids that name
//     their stream; a GET with Last-Event-ID replays what followed on that
//     stream, within a bounded window (ResumeEvents per stream,
//     ResumeStreams answered POST streams per session).
//   - MCP 2026-07-28 requests, which carry their version in _meta and need
//     no session: with a spawned server, the requests of one principal
//     share one long-lived session and server process, each under an id
//     of the gateway's own, as a stateless HTTP server serves them all
//     with one process (shared.go); with a remote server, each is served
//     by a one-shot session that lives while the request (and a retry
//     echoing an input_required's requestState) is in flight (oneshot.go);
//     the MCP-Protocol-Version, Mcp-Method and Mcp-Name
//     headers must match the body (-32020 otherwise); closing the response
//     stream cancels the request. The requestState a client sees is a
//     sealed wrapper the gateway minted around the server's (basic/
//     patterns/mrtr; requeststate.go, rounds.go), good for one retry.
//   - The 2024-11-05 HTTP+SSE transport: GET /sse opens a session and its
//     one event stream, whose endpoint event names POST /message?sessionId=.
//
// Routing (session.go): every message the proxy writes to the client goes
// on exactly one stream: a response on the stream of the POST that carried
// its request; a request or notification related to an open request (by
// progress token, by the request a cancellation names, or by the response
// stream a remote upstream sent it on, which the bridge reports through
// bridge.RelatedWriter) on that request's stream; anything else on the
// standing GET stream. What no connection carries yet waits there, bounded
// in bytes (MaxBuffered); past the bound the session ends, saying why.
// What waits behind a connection is bounded too (StreamBuffered): a
// client that does not read its stream has the connection closed, saying
// why, and resumes with Last-Event-ID.
//
// One file per concern: gateway.go (options, sessions' lifetimes),
// evict.go (making room at MaxSessions), http.go (the /mcp handlers),
// oneshot.go (stateless 2026-07-28 requests), shared.go (their shared
// sessions with a spawned server), requeststate.go (the
// requestState wrapper), rounds.go (the rounds a gateway knows, and
// wrapping and unwrapping), legacy.go (HTTP+SSE), session.go (a session's
// connection to its bridge session, and routing), stream.go and pump.go
// (streams, and writing them to connections), guard.go (Host, Origin,
// fetch metadata, token, principals, limits), clients.go (named clients), envelope.go (what the
// gateway reads of a message, and the one rewrite of its members).
//
// Security: every request passes the Host and Origin rules of package
// hostguard (the DNS-rebinding defence the transport spec requires), the
// fetch-metadata rule (a browser's navigation, or another site's page
// with no allowed Origin, opens nothing), and the bearer token (compared
// in constant time) unless authentication is off, or a named client's
// credential (clients.go: `aep-mcp-bridge clients add`); bodies, headers
// and idle connections are bounded. Each request acts for a principal (a
// named client, the token's holder, or anonymous), and a session belongs
// to the principal that opened it; a named client's sessions end when its
// record is revoked, changed or expires, and carry its name on every event
// (aep.ExtClient) and log line. Session ids are 128 random bits, and a session's
// messages, streams and event ids are reachable only through its own id,
// so one session can never see or answer another's. A stateless retry is
// routed only by a wrapper the gateway (or its fleet) minted, bound to
// its round, request and principal, and used once on the gateway that
// sees it. MaxSessions bounds concurrent sessions: at the bound the least
// recently used idle session (no request in flight, no question open)
// ends to make room, and only when every session is busy does a new one
// get 503 with Retry-After (evict.go); SessionIdle ends sessions nobody
// uses; a session whose upstream dies ends alone, its in-flight requests
// answered with an error naming the cause.
package gateway

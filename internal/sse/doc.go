// Package sse reads text/event-stream, the server-sent events format, for
// every client of an event stream in the bridge: the remote MCP upstreams
// (streamable HTTP response and GET streams, the legacy HTTP+SSE stream),
// the operator CLI's view of an AEP endpoint's /stream, and the fan-out
// benchmark.
//
// It follows the event stream interpretation of the WHATWG HTML standard,
// section "Server-sent events" (parsing an event stream, interpreting an
// event stream, dispatching the event):
//   - lines end with LF, CR or CRLF, and one leading byte order mark is
//     dropped;
//   - the stream is decoded as UTF-8, each invalid sequence becoming U+FFFD;
//   - a line starting with a colon is a comment; a line with no colon is a
//     field with an empty value; one space after the colon is dropped;
//   - "event" sets the event type, "data" appends a line to the data,
//     "id" sets the last event ID unless its value holds a NUL, "retry"
//     sets the reconnection time when it is all ASCII digits, and any
//     other field is ignored;
//   - a blank line dispatches: the last event ID becomes the stream's and
//     persists until the stream sets another; an event with no data is
//     not dispatched; the final LF of the data is removed; an unnamed
//     event is of type "message";
//   - an event the stream ends inside is discarded.
//
// Three things are the bridge's own, because a peer's bytes are hostile
// and its messages may be of any size:
//   - memory is bounded (Options.MaxEventSize): an event over it stops the
//     stream with a *TooLargeError that names the limit, never a
//     truncated event;
//   - an event whose data passes Options.StreamAbove is handed over as a
//     stream (Event.Rest) rather than held, so data of any size passes in
//     bounded memory; data lines are read piece by piece as they arrive,
//     and decoded in pieces that decode exactly as the whole line would.
//     Such an event is handed over before its blank line, so it carries
//     the id and type its fields set before that point;
//   - a stream that ends inside an event says so (ErrPartialEvent) rather
//     than ending as if clean.
//
// A Reader parses; reconnecting, and honouring the retry time, is its
// caller's business (see upstream for MCP's resumption with Last-Event-ID).
package sse

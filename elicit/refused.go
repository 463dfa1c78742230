package elicit

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// A question the lifecycle refuses at one of its limits (an
// *attention.LimitError: the event's bytes, the session's open questions
// or their bytes) is the server's doing, not a fault of the bridge: the
// server gets an error that names the limit, and the log is not the
// server's to flood.

// limitError returns err as an *attention.LimitError, or nil.
func limitError(err error) *attention.LimitError {
	var le *attention.LimitError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// limitMessage is the JSON-RPC error code and message for a question
// refused at limit le: invalid params for a question too large to carry
// as an event, which only a smaller question fixes; an internal error,
// naming the limit, for a session that holds too many open questions,
// which clears as they are settled.
func limitMessage(le *attention.LimitError) (int, string) {
	if le.Limit == attention.LimitEventBytes {
		return codeInvalidParams, fmt.Sprintf("Invalid params: the question is too large for the bridge (limit: %s): %s", le.Limit, le.Error())
	}
	return codeInternal, fmt.Sprintf("the bridge is at a limit (%s): %s", le.Limit, le.Error())
}

// limitResponse is the error response to server request id for a question
// refused at limit le.
func limitResponse(id json.RawMessage, le *attention.LimitError) []byte {
	code, msg := limitMessage(le)
	return errorResponse(id, code, msg)
}

// logRefused logs a question refused at limit le, sparsely (logSparse).
// It names the limit, never the question.
func (p *Proxy) logRefused(le *attention.LimitError, what string) {
	p.logSparse(&p.refused, "a question was refused at a limit; "+what, "limit", le.Limit, "max", le.Max, "size", le.Size)
}

// logSparse logs msg at Warn for the 1st, 2nd, 4th, 8th… time n counts,
// with the count so far, and at Debug otherwise, so a peer that keeps
// causing it cannot flood the log. A count, not a clock: it needs no timer.
func (p *Proxy) logSparse(n *atomic.Int64, msg string, args ...any) {
	c := n.Add(1)
	level := p.log.Debug
	if c&(c-1) == 0 {
		level = p.log.Warn
	}
	level(msg, append(args, "count", c)...)
}

package elicit

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// The end of a request ends its questions. When the client request that
// caused a question ends while the question is open (the client cancels
// it, or the server's response to it passes through), nobody is waiting
// for the answer any more: the question is dismissed on the bus, and the
// server gets cancel for its elicitation. This needs the link between a
// question and its request, which the bridge knows in two cases:
//   - an elicitation/create that came on the response stream of that
//     request (streamable HTTP; see RelatedReader);
//   - the questions of a multi round-trip exchange (MCP 2026-07-28),
//     whose request the bridge retries itself; a retry in flight is
//     cancelled upstream too.
//
// Elsewhere (stdio, the GET stream, HTTP+SSE) an elicitation names no
// request, and its question waits for its own timeout.

// RelatedReader is a Conn that knows on which client request's response
// stream each server message came. *upstream.Conn implements it; the
// proxy uses it on the server's side when it is there.
type RelatedReader interface {
	// ReadRelated is ReadMessage, with the id of the client request whose
	// response stream carried the message (nil when none did).
	ReadRelated() (msg []byte, related json.RawMessage, err error)
}

// RelatedFrameReader is a RelatedReader that hands over a message too
// large to read whole as a stream (see FrameReader); the proxy prefers it.
type RelatedFrameReader interface {
	ReadRelatedFrame() (f jsonrpc.Frame, related json.RawMessage, err error)
}

// endRequest ends the questions of the client request with id key k.
func (p *Proxy) endRequest(k string) {
	p.mu.Lock()
	var qs []*question
	for _, q := range p.questions {
		if q.related == k && !q.done {
			q.ended = true
			if q.qid != "" {
				qs = append(qs, q)
			} // else ask dismisses it once it has its id
		}
	}
	rd := p.byClient[k]
	p.mu.Unlock()
	slices.SortFunc(qs, func(a, b *question) int { return compareIDs(a.qid, b.qid) })
	for _, q := range qs {
		if p.mgr.Dismiss(q.qid) { // deliver sends the server cancel
			p.log.Info("the request that asked a question ended; the question is dismissed", "question", q.qid)
		}
	}
	if rd != nil {
		p.abandonRound(rd)
	}
}

func compareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// abandonRound stops a multi round-trip exchange whose client request
// ended: its open questions are dismissed, and a retry of the bridge's in
// flight is cancelled upstream.
func (p *Proxy) abandonRound(rd *round) {
	p.mu.Lock()
	if rd.done || rd.failed {
		p.mu.Unlock()
		return
	}
	rd.failed, rd.abandoned = true, true
	delete(p.byClient, idKey(rd.clientID))
	var retry json.RawMessage
	for _, k := range slices.Sorted(maps.Keys(p.rounds)) {
		if p.rounds[k] == rd {
			// Kept, so the retry's late answer is recognised and dropped.
			retry = json.RawMessage(k)
		}
	}
	p.mu.Unlock()
	p.dismissRound(rd)
	if retry != nil {
		n, _ := notification(mcp.MethodNotificationCancelled, map[string]any{"requestId": retry, "reason": "the client cancelled the request"})
		p.writeServer(n)
	}
	p.log.Info("multi round-trip: the client's request ended; the exchange is abandoned")
}

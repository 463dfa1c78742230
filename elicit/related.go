package elicit

import (
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// The end of a request ends its questions. When the client request that
// caused a question ends while the question is open (the client cancels
// it, or the server's response to it passes through), nobody is waiting
// for the answer any more: the question is dismissed on the bus, and the
// server gets cancel for its elicitation. This needs the link between a
// question and its request, which the bridge knows in two cases:
//   - an elicitation/create that came on the response stream of that
//     request (streamable HTTP: Frame.Related);
//   - the questions of a multi round-trip exchange (MCP 2026-07-28),
//     whose request the bridge retries itself; a retry in flight is
//     cancelled upstream too.
//
// A Conn says which request's stream a server message came on in
// Frame.Related. Elsewhere (stdio, the GET stream, HTTP+SSE) an
// elicitation names no request, and its question waits for its own
// timeout.

// endRequest ends the questions of the client request with id key k.
func (p *Proxy) endRequest(k string) {
	p.mu.Lock()
	var qs []*question
	for e := p.questions.oldest; e != nil; e = e.newer {
		q := e.val
		if q.related == k && q.state != settled {
			if q.state == asked {
				q.state = requestEnded
			}
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
	if rd.state != roundAsking {
		p.mu.Unlock()
		return
	}
	rd.state = roundAbandoned
	delete(p.byClient, idKey(rd.clientID))
	var retry json.RawMessage
	if k := idKey(rd.retryID); rd.retryID != nil {
		if cur, ok := p.rounds.get(k); ok && cur == rd {
			// Kept, so the retry's late answer is recognised and dropped.
			retry = rd.retryID
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

package elicit

import (
	"encoding/json"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// The proxy reaches the attention lifecycle through Lifecycle only. Data
// flows one way: the proxy raises questions (elicit → translate →
// attention → bus), and each question's resolution comes back through the
// Deliver callback of its Spec (bus → control → attention → elicit). The
// proxy never reads the bus, and a test can put an in-memory lifecycle in
// the manager's place.

// Asker raises questions: the outbound half of the seam.
type Asker interface {
	// Raise publishes a question and returns its id, the subject
	// operators answer. Unless Raise fails, the lifecycle calls
	// s.Deliver exactly once, outside its locks, with the resolution.
	Raise(s attention.Spec) (string, error)
	// Scripted reports whether a scripted rule will settle a form
	// question from server, so the proxy does not also give it to the
	// client.
	Scripted(server string, form *translate.Form) bool
}

// Settler settles questions from the MCP side: the half of the seam for
// what the client and the server say about a question already raised.
// Each call decides a race under the lifecycle's lock, so exactly one of
// the client, an operator, the timeout and the server ends a question.
type Settler interface {
	// ClientAnswered records that the client answered its copy of
	// question id with result (its ElicitResult). It reports whether the
	// client won; the loser's Deliver sees Dismissed.
	ClientAnswered(id, client string, result json.RawMessage) bool
	// Dismiss withdraws question id (attention.resolved{dismissed}) and
	// reports whether it was still pending.
	Dismiss(id string) bool
	// Complete resolves the URL question with elicitationID, which the
	// server said is complete, and reports whether one was pending.
	Complete(elicitationID string) bool
}

// Lifecycle is the attention lifecycle as the proxy uses it.
// *attention.Manager implements it.
type Lifecycle interface {
	Asker
	Settler
}

var _ Lifecycle = (*attention.Manager)(nil)

// raise raises a question and counts it open until its resolution is
// delivered: keepalive progress flows while any question is open. The
// count goes up before Raise, since a scripted answer may be delivered
// before Raise returns.
func (p *Proxy) raise(s attention.Spec) (string, error) {
	// The tool.* events queued before the question come before it.
	p.flushTools(nil)
	deliver := s.Deliver
	p.open.Add(1)
	s.Deliver = func(r attention.Resolution) {
		p.open.Add(-1)
		deliver(r)
	}
	id, err := p.mgr.Raise(s)
	if err != nil {
		p.open.Add(-1)
	}
	return id, err
}

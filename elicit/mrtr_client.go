package elicit

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// clientRetry handles a client's own retry of an exchange whose
// input_required it also got. It returns what to forward and whether it
// handled the message; when it did not, what it returns is the retry to
// pass on (raw, or raw with the answers operators gave first). If the
// client answered first, its retry passes and the operators' questions are
// settled; if the operators won, the client's retry is answered with the
// bridge's final result.
func (p *Proxy) clientRetry(m *message, raw []byte) ([]byte, bool) {
	if !mayAskForInput(m.Method) {
		return raw, false
	}
	state := jsonrpc.DecodeString(m.ReqState) // "" unless a string
	if state == "" {
		return raw, false
	}
	p.mu.Lock()
	rd, ok := p.states.get(state)
	if ok {
		p.forgetStateLocked(state, rd)
	}
	if p.ownStates && strings.HasPrefix(state, ownStatePrefix) {
		// The server gets its own requestState back: the round's, or
		// for a round this proxy does not hold (another gateway of a
		// fleet handed it out, or the session that did ended) the one
		// the token carries, and the retry goes on as a request.
		_, server, _ := strings.Cut(strings.TrimPrefix(state, ownStatePrefix), ".")
		if ok {
			server = rd.serverState
		}
		var nm message
		if out, err := setPath(raw, server, "params", "requestState"); err == nil && nm.parse(out) == nil {
			*m, raw = nm, out
		}
	}
	if ok && rd.split {
		return p.splitRetry(rd, m, raw) // unlocks p.mu
	}
	operatorsWon := ok && (rd.state == roundDone || rd.n > 0)
	var final json.RawMessage
	if operatorsWon {
		final = rd.final
		if final == nil {
			rd.clientRt = append(rd.clientRt, m.ID) // the bridge's retry is in flight
		}
	}
	if ok && !operatorsWon && rd.state == roundAsking {
		rd.state = roundClientTook // the client answered first
	}
	p.mu.Unlock()
	if !ok {
		return raw, false
	}
	if !operatorsWon {
		// A question the client did not win was settled by an operator
		// (told accepted) or the timeout, whose answer the lifecycle
		// delivers to the round right after its decision: the retry
		// waits for it, so the server gets the winner's answer.
		p.awaitDelivered(rd, p.clientRoundAnswers(rd, m, true))
		return p.withOperatorAnswers(rd, m, raw), false // tracked as an ordinary request
	}
	// The operators won: the client's answers lost, which the bus
	// records; its retry, whatever it carries, never goes upstream and
	// gets the final result of the bridge's own.
	p.clientRoundAnswers(rd, m, false)
	if final != nil {
		p.answerClientRetry(final, m.ID)
	}
	return nil, true
}

// clientRoundAnswers hands the lifecycle the answers a client retry
// carries for the first round's questions. When the client answered first
// (won), its answers resolve them (via oob) and the questions it left
// unanswered are dismissed; when the operators had answered, each of its
// answers is recorded as one that lost the race. It returns the keys of
// the questions the lifecycle had settled otherwise.
func (p *Proxy) clientRoundAnswers(rd *round, m *message, won bool) []string {
	var answers struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	json.Unmarshal(m.Params, &answers)
	p.mu.Lock()
	qids := maps.Clone(rd.clientQids)
	p.mu.Unlock()
	client := p.clientName()
	var lost []string
	for _, key := range slices.Sorted(maps.Keys(qids)) {
		var settled bool
		if r, ok := answers.InputResponses[key]; ok {
			settled = !p.mgr.ClientAnswered(qids[key], client, r)
		} else if won {
			settled = !p.mgr.Dismiss(qids[key])
		}
		if settled {
			lost = append(lost, key)
		}
	}
	return lost
}

// awaitDelivered waits until the lifecycle delivered the resolutions of
// the round's questions under keys, or the proxy closes. A resolution is
// delivered once, outside the lifecycle's lock, right after it decided.
func (p *Proxy) awaitDelivered(rd *round, keys []string) {
	for _, key := range keys {
		p.mu.Lock()
		d := rd.delivered[key]
		p.mu.Unlock()
		if d == nil {
			continue
		}
		select {
		case <-d:
		case <-p.stopping:
			return
		}
	}
}

// withOperatorAnswers returns the client's retry raw with the answers
// operators (or the timeout) gave before it arrived: the client's own
// answers to those questions lost their races, as the bus records, so the
// server gets the winners' answers, not the losers'. raw is returned as it
// is when no question of the round was settled before the client's retry.
func (p *Proxy) withOperatorAnswers(rd *round, m *message, raw []byte) []byte {
	p.mu.Lock()
	won := maps.Clone(rd.results)
	p.mu.Unlock()
	if len(won) == 0 {
		return raw
	}
	var params struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	json.Unmarshal(m.Params, &params)
	responses := params.InputResponses
	if responses == nil {
		responses = map[string]json.RawMessage{}
	}
	maps.Copy(responses, won)
	out, err := setPath(raw, responses, "params", "inputResponses")
	if err != nil {
		p.log.Warn("multi round-trip: the client's retry could not carry the operators' answers", "err", err)
		return raw
	}
	p.log.Info("multi round-trip: the client's retry carries the answers operators gave first", "answers", len(won))
	return out
}

// answerClientRetry answers a client's retry with the final result the
// bridge's own retry got.
func (p *Proxy) answerClientRetry(final, id json.RawMessage) {
	b, err := setPath(final, id, "id")
	if err != nil {
		return
	}
	p.writeClient(b)
}

// heldRetry is a client's retry of a split round that waits for the
// operators' answers.
type heldRetry struct {
	m   *message
	raw []byte
}

// splitRetry handles the client's retry of a split round; p.mu is held,
// and released. Once every operator answered, the retry passes on with
// their answers added (as an ordinary request); before, it is held and
// forwardHeld sends it when the last answer comes; if the round failed,
// the retry gets its error.
func (p *Proxy) splitRetry(rd *round, m *message, raw []byte) ([]byte, bool) {
	switch {
	case rd.state == roundFailed:
		final := rd.final
		p.mu.Unlock()
		p.answerClientRetry(final, m.ID)
		return nil, true
	case rd.state == roundAsking && rd.waiting > 0:
		if rd.held != nil {
			// A second retry of one round: the server would see two.
			p.mu.Unlock()
			p.writeClient(errorResponse(m.ID, codeInvalidParams, "Invalid params: this requestState was already used by a retry that waits for an operator's answer"))
			return nil, true
		}
		// m's members are slices of raw, which the caller reuses: the
		// held retry is a copy, parsed again.
		held := &heldRetry{raw: slices.Clone(raw), m: &message{}}
		if err := held.m.parse(held.raw); err != nil {
			p.mu.Unlock()
			return p.withOperatorAnswers(rd, m, raw), false
		}
		rd.held = held
		p.mu.Unlock()
		p.log.Info("multi round-trip: the client's retry waits for the operators' answers to the round's elicitations")
		return nil, true
	}
	p.mu.Unlock()
	return p.withOperatorAnswers(rd, m, raw), false
}

// forwardHeld sends a held client retry upstream with the operators'
// answers, as clientMessage forwards a request.
func (p *Proxy) forwardHeld(rd *round, h *heldRetry) {
	out := p.withOperatorAnswers(rd, h.m, h.raw)
	out, declared := p.injectMetaCapabilities(h.m, out)
	p.track(h.m, declared)
	p.later(func() { p.writeServer(out) })
}

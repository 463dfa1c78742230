package elicit

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
	"github.com/mark3labs/mcp-go/mcp"
)

// Multi round-trip requests (MCP 2026-07-28, basic/patterns/mrtr): a
// server asks for input by answering tools/call, prompts/get or
// resources/read with resultType "input_required". The bridge raises every
// elicitation input request as a question at once, and when all are
// answered retries the original request upstream itself, under an id of its
// own, with inputResponses and the echoed requestState, round after round,
// until the server returns a final result, which the client receives under
// its own id.

// mayAskForInput reports whether a request of method may end in
// input_required.
func mayAskForInput(method string) bool {
	switch mcp.MCPMethod(method) {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead:
		return true
	}
	return false
}

// maxRounds bounds the rounds of one exchange.
const maxRounds = 8

// inputRequiredResult is the part of an input_required result the bridge
// reads.
type inputRequiredResult struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// round is one multi round-trip exchange in progress.
type round struct {
	clientID json.RawMessage // the client's original request id
	method   string
	params   json.RawMessage // the original params, without inputResponses/requestState
	reqState string          // the current requestState
	n        int             // rounds so far
	results  map[string]json.RawMessage
	// delivered holds, for each input request of the round, a channel
	// closed once its question's resolution was delivered (roundAnswer).
	delivered map[string]chan struct{}
	waiting   int
	state     roundState
	// clientCopy: the client also got the input_required (it declared
	// elicitation, route both); the first to answer wins.
	clientCopy bool
	// split: the client got the round's other requests alone, the
	// operators its elicitations; the client's retry, held until every
	// operator answered (held), carries both answers upstream.
	split bool
	held  *heldRetry
	// final is the final response (its id aside) once the bridge's
	// retry got it, or the error once the exchange failed; clientRt are
	// the ids of the client retries waiting for it.
	final    json.RawMessage
	clientRt []json.RawMessage
	// retryID is the id of the bridge's latest retry.
	retryID json.RawMessage
	// qids maps input request keys to the questions raised for them;
	// clientQids are the first round's, the round the client got too.
	qids       map[string]string
	clientQids map[string]string
	// clientState is the requestState the client got, under OwnStates
	// the proxy's own, and serverState the server's it stands for.
	clientState, serverState string
}

// roundState is where a multi round-trip exchange stands. p.mu guards
// it. An exchange leaves roundAsking once, for one of the others, and
// roundDone may follow any of them when the answer to a retry that was
// already on its way comes as a stream.
type roundState uint8

const (
	// roundAsking: the bridge raises the round's questions, waits for
	// their answers, or waits for its retry's response.
	roundAsking roundState = iota
	// roundClientTook: the client, which got the input_required too,
	// answered first; its own retry carries the exchange on.
	roundClientTook
	// roundFailed: the exchange failed; the client's request got an
	// error, or its retry gets one.
	roundFailed
	// roundAbandoned: the client's request ended (abandonRound).
	roundAbandoned
	// roundDone: the server's final response to the bridge's retry came.
	roundDone
)

// inputRequired intercepts a server's input_required answer to a client
// request. It returns what to forward and whether it handled the message.
func (p *Proxy) inputRequired(m *message, raw []byte) ([]byte, bool) {
	if !m.hasID() || jsonrpc.DecodeString(m.ResultType) != string(mcp.ResultTypeInputRequired) {
		return nil, false
	}
	var res inputRequiredResult
	if json.Unmarshal(m.Result, &res) != nil || res.ResultType != string(mcp.ResultTypeInputRequired) {
		return nil, false
	}
	p.mu.Lock()
	r, _ := p.inflight.get(m.key())
	route := p.route
	p.mu.Unlock()
	if r == nil || r.params == nil || route == RouteClient {
		return nil, false // not a request the bridge can retry: pass through
	}
	asks, others := splitInputRequests(res.InputRequests)
	if len(others) > 0 && (len(asks) == 0 || r.clientElicit && route == RouteBoth) {
		// Sampling and roots are the client's to answer; so is an
		// elicitation beside them that the client declared itself.
		return nil, false
	}
	rd := &round{clientID: r.id, method: r.method, params: r.params, clientCopy: r.clientElicit && route == RouteBoth}
	if len(others) > 0 {
		// A round that mixes elicitations the client never declared
		// (the bridge declared them, DESIGN decision 2) with requests
		// only the client can answer: operators answer the
		// elicitations, the client gets the rest, and its retry carries
		// both (splitRetry).
		rd.split = true
		res.InputRequests = asks
	}
	k := idKey(r.id)
	p.mu.Lock()
	// The bridge answers this exchange alone, or, when the client gets a
	// copy, until the input_required passes on: while its questions are
	// raised, the end of the client's request abandons it (endRequest).
	p.byClient[k] = rd
	rd.clientState, rd.serverState = res.RequestState, res.RequestState
	if (rd.clientCopy || rd.split) && p.ownStates {
		// The server's state travels in the token, for a retry that
		// reaches a proxy that does not hold the round (clientRetry).
		rd.clientState = ownStatePrefix + p.newID() + "." + res.RequestState
	}
	if rd.clientCopy || rd.split {
		p.keepState(rd.clientState, rd)
	}
	p.mu.Unlock()
	p.startRound(rd, res.InputRequests, res.RequestState)
	if !rd.clientCopy && !rd.split {
		return nil, true
	}
	p.mu.Lock()
	if p.byClient[k] == rd {
		delete(p.byClient, k)
	}
	abandoned := rd.state == roundAbandoned
	if abandoned {
		p.forgetStateLocked(rd.clientState, rd)
	}
	p.mu.Unlock()
	if abandoned {
		// The client's request ended while the questions were raised: it
		// was cancelled, or the bridge stopped waiting for it and said so.
		// The client expects no response to it, let alone a second one.
		p.log.Debug("multi round-trip: the client's request ended while its input_required was handled; it is dropped")
		return nil, true
	}
	p.settle(m)
	out := raw
	var err error
	if rd.split {
		if out, err = setPath(out, others, "result", "inputRequests"); err != nil {
			p.failRound(rd, "the bridge could not pass the client its part of the input_required: "+err.Error())
			return nil, true
		}
	}
	if rd.clientState != rd.serverState {
		if out, err = setPath(out, rd.clientState, "result", "requestState"); err != nil {
			p.failRound(rd, "the bridge could not give the client its requestState: "+err.Error())
			return nil, true
		}
	}
	return out, true // with a copy, the client races the operators
}

// ownStatePrefix begins the requestState the proxy gives a client under
// OwnStates: the prefix, a fresh id, ".", and the server's requestState.
const ownStatePrefix = "aepst1."

// splitInputRequests parts a round's input requests into elicitations
// and the others (sampling, roots).
func splitInputRequests(reqs map[string]json.RawMessage) (asks, others map[string]json.RawMessage) {
	asks, others = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for key, req := range reqs {
		var ir struct {
			Method string `json:"method"`
		}
		json.Unmarshal(req, &ir)
		if ir.Method == string(mcp.MethodElicitationCreate) {
			asks[key] = req
		} else {
			others[key] = req
		}
	}
	return asks, others
}

// forgetStateLocked forgets rd under requestState state; p.mu is held.
func (p *Proxy) forgetStateLocked(state string, rd *round) {
	delIf(p.states, state, rd)
}

// maxStates bounds the exchanges whose input_required the client also got
// and whose retry the bridge still waits for; past it the oldest is
// forgotten (its retry then goes upstream as a request of its own).
const maxStates = 256

// keepState remembers rd under its requestState for the client's retry;
// p.mu is held.
func (p *Proxy) keepState(state string, rd *round) {
	p.states.put(state, rd)
}

// startRound raises a question for every input request; retry follows
// when all are answered.
func (p *Proxy) startRound(rd *round, requests map[string]json.RawMessage, state string) {
	p.mu.Lock()
	rd.reqState, rd.results, rd.waiting, rd.qids = state, map[string]json.RawMessage{}, len(requests), map[string]string{}
	rd.delivered = make(map[string]chan struct{}, len(requests))
	for key := range requests {
		rd.delivered[key] = make(chan struct{})
	}
	subject := p.subjectLocked()
	p.mu.Unlock()
	if len(requests) == 0 {
		p.retry(rd) // load shedding: retry with the state alone
		return
	}
	// In key order, so the questions of a round are raised (and their
	// events numbered) the same way every time.
	for _, key := range slices.Sorted(maps.Keys(requests)) {
		p.mu.Lock()
		stopped := rd.state != roundAsking
		p.mu.Unlock()
		if stopped {
			return // abandoned or failed meanwhile: raise no more
		}
		req := requests[key]
		var ir struct {
			Params elicitParams `json:"params"`
		}
		json.Unmarshal(req, &ir)
		deliver := func(res attention.Resolution) { p.roundAnswer(rd, key, res) }
		spec := attention.Spec{Subject: subject, RespondVia: []string{"control"}, Deliver: deliver, Message: ir.Params.Message}
		if rd.clientCopy {
			spec.RespondVia = []string{"control", "oob"}
		}
		if ir.Params.Mode == mcp.ElicitationModeURL {
			if err := checkURL(ir.Params.URL); err != nil {
				p.failRound(rd, "Invalid params: input request "+key+": "+err.Error())
				return
			}
			spec.URL, spec.ElicitationID = ir.Params.URL, ir.Params.ElicitationID
		} else {
			form, err := translate.Parse(ir.Params.Message, ir.Params.RequestedSchema)
			if err != nil {
				p.failRound(rd, "Invalid params: input request "+key+": "+err.Error()+"; no operator form can carry it")
				return
			}
			spec.Form = form
		}
		var qid string
		var err error
		if spec.URL != "" {
			qid, err = p.raiseURL(spec, rd)
		} else {
			qid, err = p.raise(spec)
		}
		if errors.Is(err, errDuplicate) {
			p.refuseDuplicate("the multi round-trip request fails")
			p.failRound(rd, "Invalid params: input request "+key+": "+err.Error())
			return
		}
		if le := limitError(err); le != nil {
			p.logRefused(le, "the multi round-trip request fails")
			_, msg := limitMessage(le)
			p.failRound(rd, "input request "+key+": "+msg)
			return
		}
		if err != nil {
			p.failRound(rd, "the bridge could not publish the question: "+err.Error())
			return
		}
		// The id is recorded and the round's state read under one lock:
		// if the exchange was abandoned while the question was being
		// raised, dismissRound ran without this id, so it is dismissed
		// here; otherwise dismissRound sees it.
		p.mu.Lock()
		rd.qids[key] = qid
		stopped = rd.state != roundAsking
		p.mu.Unlock()
		if stopped {
			if p.mgr.Dismiss(qid) {
				p.log.Info("multi round-trip: the exchange ended while its question was raised; the question is dismissed", "question", qid)
			}
			return
		}
	}
	p.mu.Lock()
	if rd.clientCopy && rd.clientQids == nil {
		rd.clientQids = rd.qids
	}
	p.mu.Unlock()
}

// roundAnswer records one answer; the last one triggers the retry.
func (p *Proxy) roundAnswer(rd *round, key string, res attention.Resolution) {
	result, ok := elicitResult(res)
	var b []byte
	if ok {
		b, _ = json.Marshal(result)
	}
	p.mu.Lock()
	// Recorded, then delivered: a client retry waiting for this answer
	// (awaitDelivered) finds it in results.
	if ok && rd.state != roundDone {
		rd.results[key] = b
	}
	if d := rd.delivered[key]; d != nil {
		close(d)
		delete(rd.delivered, key)
	}
	if !ok || rd.state == roundDone {
		// Dismissed (the client answered, or the session is ending), or
		// the exchange is over.
		p.mu.Unlock()
		return
	}
	if rd.state != roundAsking {
		// The exchange is no longer the bridge's to retry; the client's
		// own retry carries this winning answer (clientRetry).
		p.mu.Unlock()
		return
	}
	rd.waiting--
	ready := rd.waiting == 0
	var held *heldRetry
	if ready && rd.split {
		held, rd.held = rd.held, nil
	}
	p.mu.Unlock()
	switch {
	case !ready:
	case rd.split:
		if held != nil {
			p.forwardHeld(rd, held)
		}
	default:
		p.retry(rd)
	}
}

// retry sends the original request again under a bridge-owned id, with the
// answers and the echoed state.
func (p *Proxy) retry(rd *round) {
	p.mu.Lock()
	rd.n++
	if rd.n > maxRounds {
		p.mu.Unlock()
		p.failRound(rd, fmt.Sprintf("the server asked for input more than %d times; giving up", maxRounds))
		return
	}
	// An id of the bridge's own, never one the client has in flight.
	id := "aep-mcp-bridge-" + p.newID()
	for p.inflight.has(idKey(json.RawMessage(`"` + id + `"`))) {
		id = "aep-mcp-bridge-" + p.newID()
	}
	k := idKey(json.RawMessage(`"` + id + `"`))
	rd.retryID = json.RawMessage(`"` + id + `"`)
	_, forgotten, evicted := p.rounds.put(k, rd)
	results, state := rd.results, rd.reqState
	p.mu.Unlock()
	if evicted {
		p.forgetRound(forgotten)
	}
	msg := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "method": rd.method}
	b, _ := json.Marshal(msg)
	params := rd.params
	var err error
	if len(results) > 0 {
		params, err = setPath(params, results, "inputResponses")
	}
	if err == nil && state != "" {
		params, err = setPath(params, state, "requestState")
	}
	if err == nil {
		params, err = setPath(params, map[string]any{mcp.ElicitationModeForm: map[string]any{}, mcp.ElicitationModeURL: map[string]any{}}, "_meta", metaCapabilities, "elicitation")
	}
	if err == nil {
		b, err = setPath(b, json.RawMessage(params), "params")
	}
	if err != nil {
		p.failRound(rd, "the bridge could not build the retry: "+err.Error())
		return
	}
	p.log.Info("multi round-trip: retrying the request upstream with the answers", "round", rd.n, "answers", len(results))
	// The round is already the operators' (rd.n moved above, under the
	// lock); only the write waits for the proxy's own goroutine, so an
	// operator's answer never blocks on the server (later).
	p.later(func() { p.writeServer(b) })
}

// forgetRound ends an exchange whose retry the server never answered and
// the bridge no longer tracks: the client gets an error that says so, and
// the server is told the retry is cancelled.
func (p *Proxy) forgetRound(rd *round) {
	p.mu.Lock()
	id := rd.retryID
	p.mu.Unlock()
	p.log.Warn("multi round-trip: forgot the oldest retry the server has not answered; too many in flight", "limit", p.maxTracked)
	p.failRound(rd, fmt.Sprintf("the server did not answer the bridge's retry of this request while more than %d others were in flight; the bridge stopped waiting for it", p.maxTracked))
	n, _ := notification(mcp.MethodNotificationCancelled, map[string]any{"requestId": id, "reason": "the bridge stopped waiting for this request"})
	p.later(func() { p.writeServer(n) })
}

// roundResponse handles the server's answer to a bridge retry.
func (p *Proxy) roundResponse(m *message) bool {
	if !m.hasID() {
		return false
	}
	p.mu.Lock()
	rd, ok := p.rounds.take(m.key())
	abandoned := ok && rd.state != roundAsking
	p.mu.Unlock()
	if !ok {
		return false
	}
	if abandoned {
		return true // the client's request ended: nobody waits for it
	}
	var res inputRequiredResult
	if len(m.Result) > 0 && json.Unmarshal(m.Result, &res) == nil && res.ResultType == string(mcp.ResultTypeInputRequired) {
		p.mu.Lock()
		spent := rd.n >= maxRounds
		p.mu.Unlock()
		if spent {
			p.failRound(rd, fmt.Sprintf("the server asked for input more than %d times; giving up", maxRounds))
			return true
		}
		p.startRound(rd, res.InputRequests, res.RequestState)
		return true
	}
	p.finishRound(rd, m)
	return true
}

// finishRound hands the server's final result (or error) for a bridge
// retry to the client, under the client's own id.
func (p *Proxy) finishRound(rd *round, m *message) {
	out := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"` + mcp.JSONRPC_VERSION + `"`)}
	if len(m.Result) > 0 {
		out["result"] = m.Result
	} else {
		out["error"] = m.Error
	}
	p.mu.Lock()
	rd.state = roundDone
	rd.final = nil
	clientCopy, waiting := rd.clientCopy, rd.clientRt
	rd.clientRt = nil
	var final json.RawMessage
	if clientCopy {
		final, _ = json.Marshal(out)
		rd.final = final
	}
	p.mu.Unlock()
	if clientCopy {
		// The client got the input_required too; its retry, now or
		// later, is answered with this result.
		for _, id := range waiting {
			p.answerClientRetry(final, id)
		}
		return
	}
	out["id"] = rd.clientID
	b, _ := json.Marshal(out)
	p.settleID(rd.clientID)
	p.writeClient(b)
}

// dismissRound withdraws the questions of an exchange.
func (p *Proxy) dismissRound(rd *round) {
	p.mu.Lock()
	qids := make([]string, 0, len(rd.qids))
	for _, key := range slices.Sorted(maps.Keys(rd.qids)) {
		qids = append(qids, rd.qids[key])
	}
	p.mu.Unlock()
	for _, q := range qids {
		p.mgr.Dismiss(q)
	}
}

// failRound answers the client's request with an error and stops.
func (p *Proxy) failRound(rd *round, msg string) {
	p.mu.Lock()
	if rd.state != roundAsking {
		p.mu.Unlock()
		return
	}
	rd.state = roundFailed
	var final json.RawMessage
	var waiting []json.RawMessage
	if rd.held != nil {
		rd.clientRt = append(rd.clientRt, rd.held.m.ID)
		rd.held = nil
	}
	if rd.clientCopy || rd.split {
		// The client got the input_required: its own retry is its
		// request now. A retry that waits for the bridge's (the operators
		// won), now or later, gets this error under its own id.
		final = errorResponse(nil, codeInvalidParams, msg)
		rd.final = final
		waiting, rd.clientRt = rd.clientRt, nil
	}
	p.mu.Unlock()
	p.dismissRound(rd)
	p.settleID(rd.clientID)
	if !rd.clientCopy && !rd.split {
		p.writeClient(errorResponse(rd.clientID, codeInvalidParams, msg))
		return
	}
	for _, id := range waiting {
		p.answerClientRetry(final, id)
	}
}

// settleID forgets a client request that the bridge answered itself.
func (p *Proxy) settleID(id json.RawMessage) {
	p.mu.Lock()
	p.untrackLocked(idKey(id))
	delete(p.byClient, idKey(id))
	p.mu.Unlock()
}

package elicit

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
	"github.com/mark3labs/mcp-go/mcp"
)

// elicitParams is the part of elicitation/create params the bridge reads.
type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
	ElicitationID   string          `json:"elicitationId"`
}

// question is an elicitation/create the server is waiting on an answer
// to, in the questions table under its request id key.
type question struct {
	serverID json.RawMessage
	qid      string
	// related is the id key of the client request whose response stream
	// carried the question ("" when the link is unknown).
	related string
	state   questionState
	// toClient: the client got a copy, which deliver withdraws when
	// someone else settles the question.
	toClient bool
	// clientOnly: operators cannot answer (route client, or a schema the
	// form cannot carry); a client error goes back to the server.
	clientOnly bool
	// elicitationID is a URL-mode question's elicitationId.
	elicitationID string
}

// questionState is where a question stands. p.mu guards it.
//
//	asked ──▶ requestEnded ──▶ settled
//	  │            │
//	  ├──▶ forgotten ──────▶ settled
//	  └──────────────────▶ settled
type questionState uint8

const (
	// asked: raised (or being raised), waiting for its answer.
	asked questionState = iota
	// requestEnded: the client request that asked it ended; its
	// dismissal sends the server cancel and withdraws the client's copy.
	requestEnded
	// forgotten: more than maxTracked questions were pending and this
	// one, the oldest, was dropped to make room; it ends as requestEnded
	// does.
	forgotten
	// settled: its resolution was delivered.
	settled
)

// ending reports whether the question's dismissal answers the server
// with cancel: its request ended, or the bridge stopped waiting for it.
func (s questionState) ending() bool { return s == requestEnded || s == forgotten }

// elicit handles a server's elicitation/create and returns what to forward
// to the client (nil when the client is not asked).
func (p *Proxy) elicit(m *message, raw []byte) []byte {
	var params elicitParams
	if err := json.Unmarshal(m.Params, &params); err != nil {
		p.writeServer(errorResponse(m.ID, codeInvalidParams, "Invalid params: elicitation/create params must be an object with message and requestedSchema"))
		return nil
	}
	p.mu.Lock()
	clientForm, clientURL, route, subject := p.clientForm, p.clientURL, p.route, p.subjectLocked()
	p.mu.Unlock()

	mode := params.Mode
	if mode == "" {
		mode = mcp.ElicitationModeForm
	}
	if mode == mcp.ElicitationModeURL {
		return p.elicitURL(m, raw, params, clientURL, route, subject)
	}
	if mode != mcp.ElicitationModeForm {
		p.writeServer(errorResponse(m.ID, codeInvalidParams, fmt.Sprintf("Invalid params: unknown elicitation mode %q; MCP defines form and url", mode)))
		return nil
	}
	if route == RouteClient && !clientForm {
		// The capability was never injected under route client; answer
		// as a client without elicitation does.
		p.writeServer(errorResponse(m.ID, codeMethodNotFound, "Method not found: the MCP client does not support elicitation (bridge route: client)"))
		return nil
	}
	form, err := translate.Parse(params.Message, params.RequestedSchema)
	if err != nil {
		var ue *translate.UnsupportedError
		if !errors.As(err, &ue) {
			ue = &translate.UnsupportedError{Reason: err.Error()}
		}
		if clientForm {
			// DESIGN decision 6: never half-render; the client that can
			// elicit gets the question whole, and the bus records it.
			p.log.Info("schema cannot be a form; the question goes to the MCP client", "path", ue.Path)
			return p.ask(m, raw, attention.Spec{Message: params.Message, Subject: subject, RespondVia: []string{"oob"}}, true, true)
		}
		p.refuse(ue, subject)
		p.writeServer(errorResponse(m.ID, codeInvalidParams, "Invalid params: "+ue.Error()+"; no operator form can carry it and the MCP client cannot elicit"))
		return nil
	}
	spec := attention.Spec{Form: form, Subject: subject}
	// A question a scripted rule settles is not also put to the client.
	toClient := clientForm && route != RouteRemote && !p.mgr.Scripted(subject, form)
	spec.RespondVia = respondVia(route, toClient)
	return p.ask(m, raw, spec, toClient, route == RouteClient)
}

// ask raises the question and returns raw when the client gets a copy.
func (p *Proxy) ask(m *message, raw []byte, spec attention.Spec, toClient, clientOnly bool) []byte {
	k := idKey(m.ID)
	q := &question{serverID: m.ID, toClient: toClient, clientOnly: clientOnly}
	if len(m.related) > 0 {
		q.related = idKey(m.related) // it came on that request's response stream
	}
	p.mu.Lock()
	if p.questions.has(k) {
		p.mu.Unlock()
		p.writeServer(errorResponse(m.ID, codeInvalidRequest, "Invalid Request: an elicitation with this id is already pending"))
		return nil
	}
	if eid := spec.ElicitationID; eid != "" {
		// The server's notifications/elicitation/complete names the
		// question by elicitationId alone: two pending under one id
		// would leave which one it completes to chance.
		owners, ok := p.claimURLLocked(eid, urlOwner{key: k})
		if !ok {
			p.mu.Unlock()
			p.refuseDuplicate("the server gets an error")
			p.writeServer(errorResponse(m.ID, codeInvalidParams, errDuplicateElicitationID))
			return nil
		}
		q.elicitationID = eid
		defer p.forgetURLs(owners)
	}
	p.withdrawn.del(k)
	var dropped []*question
	if _, f, evicted := p.questions.put(k, q); evicted {
		dropped = append(dropped, p.dropQuestionLocked(f))
	}
	p.mu.Unlock()
	p.dismissDropped(dropped)
	spec.Deliver = func(r attention.Resolution) { p.deliver(q, r) }
	qid, err := p.raise(spec)
	if err != nil {
		p.mu.Lock()
		p.forgetQuestionLocked(k, q)
		clientCan := p.route != RouteRemote && (spec.URL == "" && p.clientForm || spec.URL != "" && p.clientURL)
		p.mu.Unlock()
		if le := limitError(err); le != nil {
			if clientCan {
				// The client can answer it itself: it gets the question
				// as a plain relay, unseen by the bus, and its answer (or
				// error) goes back to the server untouched.
				p.logRefused(le, "it goes to the MCP client alone")
				return raw
			}
			p.logRefused(le, "the server gets an error")
			p.writeServer(limitResponse(m.ID, le))
			return nil
		}
		p.log.Error("could not raise the question; the server gets an error", "err", err)
		p.writeServer(errorResponse(m.ID, codeInternal, "the bridge could not publish the question: "+err.Error()))
		return nil
	}
	p.mu.Lock()
	q.qid = qid
	ended := q.state.ending()
	if ended {
		toClient = false
		q.toClient = false // the client never sees it: nothing to withdraw
	}
	p.mu.Unlock()
	p.log.Info("question raised", "question", qid, "route", p.route.String(), "to_client", toClient)
	if ended {
		// The request ended while the question was being raised.
		if p.mgr.Dismiss(qid) {
			p.log.Info("the request that asked a question ended; the question is dismissed", "question", qid)
		}
	}
	if toClient {
		return raw
	}
	return nil
}

// deliver sends a question's resolution to the server and withdraws the
// client's copy when an operator or the timeout settled it, or when the
// request that asked it ended (the server then gets cancel).
func (p *Proxy) deliver(q *question, r attention.Resolution) {
	k := idKey(q.serverID)
	p.mu.Lock()
	was := q.state
	if was == settled {
		p.mu.Unlock()
		return
	}
	q.state = settled
	p.forgetQuestionLocked(k, q)
	ended := was.ending() && r.Outcome == attention.Dismissed
	withdraw := q.toClient && (r.Outcome != attention.Dismissed || ended)
	if withdraw {
		if old, _, evicted := p.withdrawn.put(k, q.qid); evicted {
			// The server has its answer already; the client's late
			// answer to the forgotten one is no longer recorded, and is
			// still stale.
			p.goneQuestions.add(old)
			p.log.Warn("forgot the oldest questions withdrawn from the client: too many unanswered", "forgotten", 1, "limit", p.maxTracked)
		}
	}
	p.mu.Unlock()
	result, ok := elicitResult(r)
	if ended {
		result, ok = translate.CancelResult(), true
	}
	if !ok {
		return // dismissed: nothing goes back
	}
	b, err := resultResponse(q.serverID, result)
	if err != nil {
		p.log.Error("encoding the ElicitResult", "err", err)
		b = errorResponse(q.serverID, codeInternal, "the bridge could not encode the answer")
	}
	var n []byte
	if withdraw {
		reason := "answered by an operator"
		switch {
		case was == forgotten:
			reason = "the bridge stopped waiting for it: too many questions were pending"
		case ended:
			reason = "the request that asked it ended"
		case r.Outcome == attention.TimedOut:
			reason = "no answer before the bridge's timeout"
		}
		n, _ = notification(mcp.MethodNotificationCancelled, map[string]any{"requestId": q.serverID, "reason": reason})
	}
	send := func() {
		p.writeServer(b)
		if n != nil {
			p.writeClient(n)
		}
	}
	if ended {
		// The proxy itself ended the question, while it handles the
		// message that ended its request: the cancel goes out first.
		send()
		return
	}
	p.later(send)
}

// forgetQuestionLocked forgets q, the question under server request id
// key k, and its elicitationId; p.mu is held.
func (p *Proxy) forgetQuestionLocked(k string, q *question) {
	delIf(p.questions, k, q)
	if q.elicitationID != "" {
		if o, ok := p.urlIDs.get(q.elicitationID); ok && o.key == k {
			p.urlIDs.del(q.elicitationID)
		}
	}
}

// dropQuestionLocked forgets q, which the proxy stopped tracking because
// too many questions are pending, and marks it so that dismissDropped
// ends it as a request's end does: its server gets cancel, and the
// client's copy is withdrawn. p.mu is held; it returns q.
func (p *Proxy) dropQuestionLocked(q *question) *question {
	p.forgetQuestionLocked(idKey(q.serverID), q)
	q.state = forgotten
	return q
}

// dismissDropped dismisses the questions dropQuestionLocked forgot.
func (p *Proxy) dismissDropped(qs []*question) {
	for _, q := range qs {
		p.log.Warn("forgot the oldest question the server is waiting on; too many pending", "question", q.qid, "limit", p.maxTracked)
		if q.qid != "" { // else ask dismisses it once it has its id
			p.mgr.Dismiss(q.qid) // deliver sends the server cancel
		}
	}
}

// elicitResult is the ElicitResult a resolution sends back: the answer's,
// or cancel after a timeout. A dismissed question sends nothing (false).
func elicitResult(r attention.Resolution) (any, bool) {
	switch r.Outcome {
	case attention.Answered:
		return r.Decision.Result(), true
	case attention.TimedOut:
		return translate.CancelResult(), true
	}
	return nil, false
}

// clientAnswer handles the client's response to a question it was given.
// It returns what to forward to the server and whether the response was
// one of those.
func (p *Proxy) clientAnswer(m *message, raw []byte) ([]byte, bool) {
	if !m.hasID() {
		return nil, false
	}
	k := m.key()
	p.mu.Lock()
	if qid, ok := p.withdrawn.take(k); ok {
		p.goneQuestions.add(k) // a second answer is stale too
		p.mu.Unlock()
		// Too late: the bus records that the client's answer lost, and
		// it reaches nobody.
		if len(m.Error) == 0 {
			p.mgr.ClientAnswered(qid, p.clientName(), m.Result)
		}
		p.log.Debug("the client's late answer to a question already settled lost the race")
		return nil, true
	}
	q, ok := p.questions.get(k)
	stale := !ok && p.goneQuestions.has(k)
	p.mu.Unlock()
	if stale {
		p.log.Debug("dropped the client's late answer to a question the bridge stopped tracking")
		return nil, true
	}
	if !ok {
		return nil, false
	}
	if len(m.Error) > 0 {
		if q.clientOnly {
			// Nobody else can answer: the server gets the client's error,
			// unless the question was settled meanwhile.
			if p.mgr.Dismiss(q.qid) {
				return raw, true
			}
			return nil, true
		}
		// Operators can still answer; keep the question open for them.
		p.log.Info("the client could not answer its copy; operators still can", "question", q.qid)
		return nil, true
	}
	// The lifecycle decides the race under its lock: exactly one of the
	// client, an operator and the timeout wins. When the client loses,
	// the winner's result reaches the server through deliver.
	if p.mgr.ClientAnswered(q.qid, p.clientName(), m.Result) {
		return raw, true
	}
	return nil, true
}

// serverCancelled handles notifications/cancelled from the server: a
// withdrawn question is dismissed, and the client's copy is cancelled too.
func (p *Proxy) serverCancelled(m *message, raw []byte) []byte {
	var params struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &params) != nil || len(params.RequestID) == 0 {
		return raw
	}
	k := idKey(params.RequestID)
	p.mu.Lock()
	q, ok := p.questions.get(k)
	p.mu.Unlock()
	if !ok {
		return raw
	}
	p.mgr.Dismiss(q.qid)
	if q.toClient {
		return raw
	}
	return nil
}

// refuse records on the bus that a question could not be shown.
func (p *Proxy) refuse(ue *translate.UnsupportedError, subject string) {
	if p.pub == nil {
		return
	}
	p.flushTools(nil)
	_, _, err := p.pub.Emit(aep.Draft{Type: "error.raised", Subject: subject, Severity: aep.SeverityWarning, Capture: aep.CaptureRedacted,
		Data: map[string]any{"code": "unsupported_schema", "error": map[string]any{"type": "UnsupportedSchema", "message": ue.Error()}}})
	if err != nil {
		p.log.Warn("recording the refused schema", "err", err)
	}
}

// respondVia declares who may answer a question (AEP-0008): the client
// alone under route client, operators and the client when the client got a
// copy, operators alone otherwise.
func respondVia(route Route, toClient bool) []string {
	switch {
	case route == RouteClient:
		return []string{"oob"}
	case toClient:
		return []string{"control", "oob"}
	}
	return []string{"control"}
}

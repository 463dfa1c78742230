package elicit

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/weburl"
)

// checkURL decides whether a URL-mode elicitation's URL may be put to an
// operator: only https, or plain http to a loopback host (a local
// authorization page), as weburl.Check decides for every URL the bridge
// uses toward people. The error names at most the URL's scheme and host
// (displayURL), since it is logged.
func checkURL(raw string) error {
	var r *weburl.Refusal
	if err := weburl.Check(raw); errors.As(err, &r) {
		if r.NoHost {
			return errors.New(r.Why + "; the bridge puts only https URLs with a host to operators")
		}
		return errors.New(r.Why + "; the bridge puts only https URLs (or http to a loopback host) to operators")
	}
	return nil
}

// elicitURL handles a URL-mode elicitation/create (MCP 2025-11-25): the
// question becomes attention.requested(kind:"auth"); an operator consents
// to open the URL themselves (the bridge never fetches it), declines or
// cancels. A client that declared URL mode gets the question too under
// route both, and alone under route client.
func (p *Proxy) elicitURL(m *message, raw []byte, params elicitParams, clientURL bool, route Route, subject string) []byte {
	if params.URL == "" || params.ElicitationID == "" {
		p.writeServer(errorResponse(m.ID, codeInvalidParams, "Invalid params: URL-mode elicitation needs url and elicitationId"))
		return nil
	}
	if route == RouteClient && !clientURL {
		p.writeServer(errorResponse(m.ID, codeMethodNotFound, "Method not found: the MCP client does not support URL-mode elicitation (bridge route: client)"))
		return nil
	}
	if err := checkURL(params.URL); err != nil {
		p.log.Warn("URL-mode elicitation refused", "url", displayURL(params.URL), "err", err)
		p.writeServer(errorResponse(m.ID, codeInvalidParams, "Invalid params: "+err.Error()))
		return nil
	}
	spec := attention.Spec{Message: params.Message, Subject: subject, URL: params.URL, ElicitationID: params.ElicitationID}
	toClient := clientURL && route != RouteRemote
	spec.RespondVia = respondVia(route, toClient)
	return p.ask(m, raw, spec, toClient, route == RouteClient)
}

// elicitationComplete handles notifications/elicitation/complete: the
// matching URL question is resolved. The notification reaches the client
// only when it declared URL mode.
func (p *Proxy) elicitationComplete(m *message, raw []byte) []byte {
	var params struct {
		ElicitationID string `json:"elicitationId"`
	}
	json.Unmarshal(m.Params, &params)
	if p.mgr.Complete(params.ElicitationID) {
		p.log.Info("URL elicitation completed", "elicitation", params.ElicitationID)
	}
	p.mu.Lock()
	clientURL := p.clientURL
	p.mu.Unlock()
	if clientURL {
		return raw
	}
	return nil
}

// urlRequired raises a question for each URL elicitation a -32042 error
// lists (URLElicitationRequiredError). The error itself still reaches the
// client, which may retry once the operator completed the flow.
func (p *Proxy) urlRequired(m *message) {
	var e struct {
		Code int `json:"code"`
		Data struct {
			Elicitations []elicitParams `json:"elicitations"`
		} `json:"data"`
	}
	if json.Unmarshal(m.Error, &e) != nil || e.Code != codeURLElicitationRequired {
		return
	}
	p.mu.Lock()
	subject, clientURL := p.subjectLocked(), p.clientURL
	p.mu.Unlock()
	via := []string{"control"}
	if clientURL {
		via = append(via, "oob")
	}
	for _, el := range e.Data.Elicitations {
		if el.URL == "" {
			continue
		}
		if err := checkURL(el.URL); err != nil {
			// The error still reaches the client; no operator is asked.
			p.log.Warn("a URL a -32042 error lists is not put to operators", "url", displayURL(el.URL), "err", err)
			continue
		}
		id, err := p.raiseURL(attention.Spec{Message: el.Message, Subject: subject, URL: el.URL, ElicitationID: el.ElicitationID,
			RespondVia: via, Deliver: func(attention.Resolution) {}}, nil)
		if errors.Is(err, errDuplicate) {
			p.refuseDuplicate("the -32042 error still reaches the client")
			continue
		}
		if le := limitError(err); le != nil {
			p.logRefused(le, "the -32042 error still reaches the client")
			continue
		}
		if err != nil {
			p.log.Warn("could not raise a URL question from a -32042 error", "err", err)
			continue
		}
		p.log.Info("question raised from a URL-elicitation-required error", "question", id)
	}
}

// displayURL is what the bridge shows of a URL-mode URL in its logs and
// errors: the scheme and the host, never the user info, path or query,
// which may carry secrets (a one-time code, a session token).
func displayURL(raw string) string { return weburl.Display(raw) }

// An elicitationId names one pending URL-mode question: the server's
// notifications/elicitation/complete names the question by it alone, so
// two pending under one id would leave which one it completes to chance.
// Whichever way a URL question comes (an elicitation/create, a -32042
// error, a multi round-trip input request), one whose elicitationId is
// pending is refused.

// urlOwner is the question that holds an elicitationId in urlIDs.
type urlOwner struct {
	// key is the server request id key of an elicitation/create's
	// question (in questions), or "#n" for a question the bridge raised
	// from a -32042 error or a multi round-trip input request.
	key string
	// qid is the bridge's own question's id once raised, and rd its
	// exchange when it is a multi round-trip input request.
	qid string
	rd  *round
}

// errDuplicateElicitationID is the error a server gets for an
// elicitation/create whose elicitationId is pending.
const errDuplicateElicitationID = "Invalid params: a URL-mode elicitation with this elicitationId is already pending; give each elicitation its own elicitationId"

// errDuplicate is raiseURL's error for an elicitationId already pending.
var errDuplicate = errors.New("a URL-mode elicitation with this elicitationId is already pending; give each elicitation its own elicitationId")

// claimURLLocked records o as the owner of elicitationId eid, unless eid
// is pending (false). Past maxTracked the oldest owners are forgotten
// and returned, for forgetURLs. p.mu is held.
func (p *Proxy) claimURLLocked(eid string, o urlOwner) ([]urlOwner, bool) {
	if p.urlIDs.has(eid) {
		return nil, false
	}
	if _, old, evicted := p.urlIDs.put(eid, o); evicted {
		return []urlOwner{old}, true
	}
	return nil, true
}

// forgetURLs ends the questions whose elicitationIds claimURLLocked
// forgot: an elicitation/create's question is dropped as when too many
// are pending, a multi round-trip exchange fails, and any other question
// of the bridge's own is dismissed.
func (p *Proxy) forgetURLs(owners []urlOwner) {
	var dropped []*question
	for _, o := range owners {
		p.mu.Lock()
		q, _ := p.questions.get(o.key)
		if q != nil {
			dropped = append(dropped, p.dropQuestionLocked(q))
		}
		p.mu.Unlock()
		switch {
		case q != nil:
		case o.rd != nil:
			p.log.Warn("forgot the oldest URL-mode question of a multi round-trip exchange; too many pending", "limit", p.maxTracked)
			p.failRound(o.rd, fmt.Sprintf("more than %d URL-mode elicitations were pending; the bridge stopped waiting for this one", p.maxTracked))
		case o.qid != "":
			p.log.Warn("forgot the oldest URL-mode question; too many pending", "question", o.qid, "limit", p.maxTracked)
			p.mgr.Dismiss(o.qid)
		}
	}
	p.dismissDropped(dropped)
}

// raiseURL raises s, a URL-mode question of the bridge's own (rd is its
// multi round-trip exchange, or nil), under its elicitationId: it fails
// with errDuplicate when that id is pending, and releases the id when the
// question is resolved.
func (p *Proxy) raiseURL(s attention.Spec, rd *round) (string, error) {
	eid := s.ElicitationID
	p.mu.Lock()
	p.urlSeq++
	key := fmt.Sprintf("#%d", p.urlSeq) // never an id key, which is JSON
	owners, ok := p.claimURLLocked(eid, urlOwner{key: key, rd: rd})
	p.mu.Unlock()
	if !ok {
		return "", errDuplicate
	}
	p.forgetURLs(owners)
	release := func() {
		p.mu.Lock()
		if o, ok := p.urlIDs.get(eid); ok && o.key == key {
			p.urlIDs.del(eid)
		}
		p.mu.Unlock()
	}
	deliver := s.Deliver
	s.Deliver = func(r attention.Resolution) { release(); deliver(r) }
	qid, err := p.raise(s)
	if err != nil {
		release()
		return "", err
	}
	p.mu.Lock()
	if o, ok := p.urlIDs.get(eid); ok && o.key == key {
		o.qid = qid
		p.urlIDs.put(eid, o) // in its place
	}
	p.mu.Unlock()
	return qid, nil
}

// refuseDuplicate logs a URL-mode elicitation refused because its
// elicitationId is pending, sparsely (logSparse).
func (p *Proxy) refuseDuplicate(what string) {
	p.logSparse(&p.dupes, "URL-mode elicitation refused: its elicitationId is already pending; "+what)
}

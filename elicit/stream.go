package elicit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// Messages the proxy does not read whole, relayed as streams: one over the
// size its Conn reads whole, or one nested deeper than encoding/json
// decodes. The proxy reads their envelope with a jsonrpc.Scanner as the
// bytes pass and changes nothing in them but what it must:
//   - the _meta of a client request's params, where it declares
//     elicitation (MCP 2026-07-28), wherever _meta falls in params;
//   - the id of the server's answer to one of the bridge's own retries,
//     which the client receives under its own id.
//
// What the bridge must read whole to handle (an initialize, an
// elicitation/create) is refused with a JSON-RPC error carrying the
// message's id, when its head names it; a message whose method comes only
// after that much of its body has already gone on as it was, and is
// logged. Bookkeeping (tracking a request, settling a response) happens at
// the message's end, before its newline, so the peer cannot answer a
// request the proxy has not yet tracked.

// maxParseDepth is the deepest nesting encoding/json decodes.
const maxParseDepth = 10000

// streamCapture names the members the proxy reads of a streamed message.
var streamCapture = map[string]int{
	"params._meta":      1 << 20,
	"params.requestId":  jsonrpc.MaxEnvelopeMember,
	"result.resultType": 256,
	// A CallToolResult's isError, for the end of a tools/call under an
	// approval policy (tool.completed or tool.failed).
	"result.isError": 16,
}

// relayStream relays a message the proxy does not read whole: fr.Head is
// its first bytes, and fr.Rest the remainder, or nil when the head is all
// of it (a message too deep to decode).
func (p *Proxy) relayStream(ctx context.Context, fr Frame, fromClient bool) {
	head, rest := fr.Head, fr.Rest
	limit := fr.Limit
	if limit == 0 {
		limit = DefaultMaxMessage
	}
	pre := jsonrpc.NewScanner(jsonrpc.ScanOptions{Capture: streamCapture})
	pre.Write(head)
	if rest == nil {
		pre.Finish()
	}
	env := pre.Envelope()
	if err := pre.Err(); err != nil {
		p.refuseStream(head, rest, fromClient, codeParseError, "Parse error: the message is not valid JSON: "+err.Error())
		return
	}
	if what := p.mustReadWhole(env, fromClient); what != "" {
		p.refuseStream(head, rest, fromClient, codeInvalidRequest, fmt.Sprintf(
			"Invalid Request: %s is %s; the bridge reads %s whole, up to %s and %d levels of nesting; send a smaller one",
			what, describeSize(rest, env, limit), what, sizeLimit(limit), maxParseDepth))
		return
	}
	var rd *round
	if !fromClient && env.IsResponse() {
		var refused bool
		if rd, refused = p.streamedRound(env, head, rest, limit); refused {
			return
		}
	}
	if fromClient && env.IsResponse() && p.isQuestion(env.ID) {
		p.log.Warn("the client's answer to a question is too large or too deep to read; the question stays open for operators")
		drain(head, rest)
		return
	}
	if env.IsResponse() && rd == nil && (fromClient && p.staleAnswer(env.ID) || !fromClient && p.staleResult(env.ID)) {
		p.log.Debug("dropped a large late response to a request the bridge stopped tracking", "from_client", fromClient)
		drain(head, rest)
		return
	}
	p.passStream(ctx, head, rest, fromClient, rd)
}

// mustReadWhole names what the proxy reads whole to handle it, by the
// envelope read from the message's head, or "".
func (p *Proxy) mustReadWhole(env *jsonrpc.Envelope, fromClient bool) string {
	switch {
	case fromClient && env.Method == string(mcp.MethodInitialize):
		return "the initialize request"
	case !fromClient && env.Method == string(mcp.MethodElicitationCreate):
		return "the elicitation/create request"
	case fromClient && p.pol != nil && env.Method == string(mcp.MethodToolsCall):
		// The approval policy reads every call: none passes unread.
		return "a tools/call under an approval policy"
	}
	return ""
}

// isQuestion reports whether id is that of a question the client was
// given a copy of.
func (p *Proxy) isQuestion(id json.RawMessage) bool {
	if !jsonrpc.HasID(id) {
		return false
	}
	k := idKey(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.questions.has(k) || p.withdrawn.has(k)
}

// streamedRound takes the round a streamed server response answers, if it
// answers one of the bridge's own retries. A response the bridge cannot
// hand on as the final result (another input_required, or one the client's
// own retry must get whole) fails the exchange; refused reports that.
func (p *Proxy) streamedRound(env *jsonrpc.Envelope, head []byte, rest io.Reader, limit int) (*round, bool) {
	if !env.HasID() {
		return nil, false
	}
	k := idKey(env.ID)
	p.mu.Lock()
	rd, ok := p.rounds.take(k)
	clientCopy := ok && rd.clientCopy
	p.mu.Unlock()
	if !ok {
		return nil, false
	}
	var rt string
	json.Unmarshal(env.Members["result.resultType"], &rt)
	if rt == string(mcp.ResultTypeInputRequired) || clientCopy {
		drain(head, rest)
		p.failRound(rd, fmt.Sprintf("the server's answer to the bridge's retry is %s, too large for the bridge to read whole", describeSize(rest, env, limit)))
		return nil, true
	}
	return rd, false
}

// passStream relays the message to the other peer, declaring elicitation
// in a client request's _meta and giving a retry's answer the client's id.
func (p *Proxy) passStream(ctx context.Context, head []byte, rest io.Reader, fromClient bool, rd *round) {
	dst := p.client
	o := jsonrpc.ScanOptions{Capture: streamCapture, Rewritable: map[string]bool{}}
	if fromClient {
		dst = p.server
		o.Rewritable["params._meta"] = true
	}
	if rd != nil {
		o.Capture = map[string]int{"id": jsonrpc.MaxEnvelopeMember}
		o.Rewritable["id"] = true
	}
	o.Rewrite = func(path string, v []byte, env *jsonrpc.Envelope) []byte {
		switch {
		case path == "id" && rd != nil:
			return rd.clientID
		case path == "params._meta" && env.HasID():
			// An id and params: a request, whatever its method.
			if meta, _ := p.declareInMeta(v); meta != nil {
				return meta
			}
		}
		return v
	}
	sr := &scanReader{opts: o, head: head, rest: rest, done: func(sc *jsonrpc.Scanner) {
		p.streamed(sc.Envelope(), sc.Err(), fromClient, rd)
	}}
	if err := dst.Write(ctx, Frame{Rest: sr}); err != nil {
		p.log.Debug("relaying a streamed message failed", "err", err)
	}
}

// scanReader is a message relayed as a stream, as the destination's Conn
// reads it: head and rest pass through a Scanner that reads the envelope
// and rewrites what the options say, and done does the message's
// bookkeeping once the source ended, before the Conn ends the message, so
// the peer cannot answer a request the proxy has not yet tracked.
// WriteTo, which io.Copy prefers, writes the bytes through without a copy
// of its own.
type scanReader struct {
	opts jsonrpc.ScanOptions
	head []byte
	rest io.Reader
	done func(*jsonrpc.Scanner)
	sc   *jsonrpc.Scanner
	out  bytes.Buffer
	buf  []byte
	eof  bool
	err  error
}

// WriteTo scans the message into w.
func (r *scanReader) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	o := r.opts
	o.Out = cw
	sc := jsonrpc.NewScanner(o)
	sc.Write(r.head)
	var rerr error
	if r.rest != nil {
		_, rerr = io.Copy(sc, r.rest)
	}
	sc.Finish()
	r.done(sc)
	if rerr == nil {
		rerr = cw.err
	}
	return cw.n, rerr
}

// Read is WriteTo for a Conn that pulls the bytes.
func (r *scanReader) Read(p []byte) (int, error) {
	if r.sc == nil {
		o := r.opts
		o.Out = &r.out
		r.sc = jsonrpc.NewScanner(o)
		r.sc.Write(r.head)
	}
	for r.out.Len() == 0 && !r.eof {
		if r.rest == nil {
			r.finish()
			break
		}
		if r.buf == nil {
			r.buf = make([]byte, 32<<10)
		}
		n, err := r.rest.Read(r.buf)
		r.sc.Write(r.buf[:n])
		switch {
		case err == io.EOF:
			r.finish()
		case err != nil:
			r.finish()
			r.err = err
		}
	}
	if r.out.Len() > 0 {
		return r.out.Read(p)
	}
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

func (r *scanReader) finish() {
	r.eof = true
	r.sc.Finish()
	r.done(r.sc)
}

// countWriter counts what it writes and keeps the first error.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// streamed does the bookkeeping of a message relayed as a stream, once
// its envelope is read whole.
func (p *Proxy) streamed(env *jsonrpc.Envelope, err error, fromClient bool, rd *round) {
	if err != nil {
		p.log.Warn("relayed a large message whose JSON breaks after its head; the peer will reject it", "err", err)
	}
	if env.Batch {
		p.log.Warn("relayed a batch too large to read whole without reading its messages")
	}
	m := &message{ID: env.ID, Method: env.Method}
	if !fromClient && env.IsRequest() {
		p.reviveQuestionID(env.ID)
	}
	switch {
	case fromClient && env.IsRequest():
		p.startSession(m)
		m.Meta = env.Members["params._meta"]
		p.track(m, false)
	case fromClient && env.Method == string(mcp.MethodNotificationCancelled):
		p.startSession(m)
		if id := env.Members["params.requestId"]; id != nil {
			p.settleID(id)
		}
	case fromClient:
		p.startSession(m)
	case rd != nil:
		p.mu.Lock()
		rd.state = roundDone
		p.mu.Unlock()
		p.streamedToolResult(rd.clientID, env)
		p.settleID(rd.clientID)
	case env.IsResponse():
		p.streamedToolResult(env.ID, env)
		p.settle(m)
	case env.Method == string(mcp.MethodElicitationCreate):
		p.log.Warn("the server's elicitation/create named its method only after more than the bridge reads whole; it went to the client unread")
	}
	if fromClient && env.Method == string(mcp.MethodInitialize) {
		p.log.Warn("the client's initialize named its method only after more than the bridge reads whole; it went to the server without the bridge's elicitation declaration")
	}
}

// refuseStream reads the rest of a message the proxy will not relay, for
// its id, and answers its sender with a JSON-RPC error carrying that id.
func (p *Proxy) refuseStream(head []byte, rest io.Reader, fromClient bool, code int, why string) {
	env := drain(head, rest)
	reply, peer := p.writeServer, "server"
	if fromClient {
		reply, peer = p.writeClient, "client"
	}
	if !env.HasID() {
		p.log.Warn("refused a message from the "+peer+" that takes no response", "reason", why)
		return
	}
	p.log.Warn("refused a message from the "+peer+"; answered with an error", "reason", why)
	reply(errorResponse(env.ID, code, why))
}

// drain reads a message to its end and returns its envelope.
func drain(head []byte, rest io.Reader) *jsonrpc.Envelope {
	sc := jsonrpc.NewScanner(jsonrpc.ScanOptions{})
	sc.Write(head)
	if rest != nil {
		io.Copy(sc, rest)
	}
	sc.Finish()
	return sc.Envelope()
}

// describeSize says why a message is not read whole: its size or depth.
func describeSize(rest io.Reader, env *jsonrpc.Envelope, limit int) string {
	if rest == nil {
		return fmt.Sprintf("nested %d levels deep", env.MaxDepth)
	}
	return "over " + sizeLimit(limit)
}

// sizeLimit writes a byte count the way people read one.
func sizeLimit(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

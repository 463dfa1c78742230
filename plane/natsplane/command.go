package natsplane

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

type natsMsg = nats.Msg

// command is a command as it travels, sealed, from the front door that
// took it to its session's owner.
type command struct {
	// Door is the fingerprint of the front door's key.
	Door string `json:"door"`
	// By is who sent it, as the front door authenticated them.
	By plane.Principal `json:"by"`
	// Sent is when the front door sent it (Unix nanoseconds): the owner
	// refuses one older than MaxSkew, so a captured command cannot be
	// replayed later.
	Sent int64 `json:"sent"`
	// Raw is the command's exact bytes (AEP-0004 §4.4: forwarded
	// byte-identically).
	Raw []byte `json:"raw"`
}

// reply is the owner's answer to a command: "" when the session made its
// ack decision, else a connection-scoped refusal.
type reply struct {
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Command routes an operator's command to its session's owner: this
// process's session directly; another member's, first by its recorded
// ack (a command sent again, through any front door, gets the ack it got
// the first time, byte for byte, even once the session or its owner is
// gone), else sealed to the owner, named by the key the session is
// certified to, whose sealed reply alone is believed.
func (m *Member) Command(ctx context.Context, from plane.Principal, cmd *aep.Event, raw []byte) (string, string) {
	if !from.May(plane.RightAnswer) {
		return "unauthorized", "this connection may not send commands: its credential has no answer right"
	}
	m.mu.Lock()
	c, local := m.claims[cmd.Session]
	m.mu.Unlock()
	if local {
		out := c.t.Submit(*cmd, raw, from)
		m.record(cmd, out)
		return out.Code, out.Detail
	}
	// A session an emitter connected to another door writes is routed to
	// that door, as its claim on the plane says; any other to the member
	// its id is certified to.
	owner := m.relayedOwner(cmd.Session)
	if owner == "" {
		owner = proof.SessionKey(cmd.Session)
	}
	if owner == "" {
		return "no-route", fmt.Sprintf("no session %q on the operator plane: its id names no bridge's key", cmd.Session)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.opts.CommandWait)
		defer cancel()
	}
	if m.reack(ctx, owner, cmd) {
		return "", ""
	}
	return m.send(ctx, owner, from, cmd, raw)
}

// reack re-sends the recorded ack of cmd to every front door's
// subscribers, and reports whether there was one (AEP-0004 §3).
func (m *Member) reack(ctx context.Context, owner string, cmd *aep.Event) bool {
	key := recordKey(owner, cmd.Source, cmd.ID)
	e, err := m.kvs.commands.Get(ctx, key)
	if err != nil {
		return false
	}
	outer, err := open(e.Value(), kindRecord, m.n.prefix, key)
	if err != nil || outer.fp != owner {
		return false
	}
	env, ack, tok, err := m.openEvent(outer.body)
	if err != nil || env.fp != owner || ack.Cause != cmd.ID || ack.Session != cmd.Session {
		return false
	}
	m.hub.Redeliver(*ack, outer.body[envelopeHead:])
	if err := m.nc.Publish(m.n.redeliverSubject(tok), outer.body); err != nil {
		m.log.Warn("re-sending a recorded ack to the other front doors", "cmd", cmd.ID, "err", err)
	}
	return true
}

// send seals cmd to its owner and waits for the owner's sealed reply,
// ignoring anything else that answers.
func (m *Member) send(ctx context.Context, owner string, from plane.Principal, cmd *aep.Event, raw []byte) (string, string) {
	plain, err := json.Marshal(command{Door: m.fp, By: from, Sent: m.opts.now().UnixNano(), Raw: raw})
	if err != nil {
		return "invalid", "the command could not be encoded"
	}
	sealed := m.seal.seal(adOf("cmd", m.n.prefix, owner), plain)
	nonce := sealed[4 : 4+nonceSize]
	inbox := m.nc.NewRespInbox()
	replies := make(chan *nats.Msg, 16)
	sub, err := m.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return "no-route", "the operator plane is unreachable: " + err.Error()
	}
	defer sub.Unsubscribe()
	msg := &nats.Msg{Subject: m.n.commandSubject(owner), Reply: inbox, Data: sealed}
	if err := m.nc.PublishMsg(msg); err != nil {
		return "no-route", "the operator plane is unreachable: " + err.Error()
	}
	gone := fmt.Sprintf("the bridge that owns session %q is not connected to the operator plane; its questions wait for it until they expire", cmd.Session)
	for {
		select {
		case r := <-replies:
			if r.Header.Get("Status") == "503" {
				return "no-route", gone
			}
			plain, _, err := m.seal.open(adOf("reply", m.n.prefix, owner, string(nonce)), r.Data)
			if err != nil {
				continue // not the owner's: nobody else can seal a reply
			}
			var rp reply
			if json.Unmarshal(plain, &rp) != nil {
				continue
			}
			return rp.Code, rp.Detail
		case <-ctx.Done():
			return "no-route", gone + " (no reply within the command's deadline)"
		}
	}
}

// takeCommand is the owner's side: a command sealed by a member that
// knows the token, sent within MaxSkew, from a principal that may
// answer, to a session of this process's, goes to the session's target;
// the reply is sealed to the front door's request. Anything else is
// dropped without a reply: nobody who cannot seal deserves one.
func (m *Member) takeCommand(msg *nats.Msg) {
	plain, nonce, err := m.seal.open(adOf("cmd", m.n.prefix, m.fp), msg.Data)
	if err != nil || msg.Reply == "" {
		m.log.Debug("dropped a command that is not sealed for this member")
		return
	}
	var c command
	if json.Unmarshal(plain, &c) != nil {
		return
	}
	answer := func(code, detail string) {
		b, _ := json.Marshal(reply{Code: code, Detail: detail}) // strings always encode
		if err := m.nc.Publish(msg.Reply, m.seal.seal(adOf("reply", m.n.prefix, m.fp, string(nonce)), b)); err != nil {
			m.log.Warn("replying to a front door", "err", err)
		}
	}
	if d := m.opts.now().Sub(time.Unix(0, c.Sent)); d > m.opts.MaxSkew || d < -m.opts.MaxSkew {
		answer("unauthorized", "the command was sent too long ago (or the front door's clock is off); send it again")
		return
	}
	if !c.By.May(plane.RightAnswer) {
		answer("unauthorized", "this connection may not send commands: its credential has no answer right")
		return
	}
	cmd, err := aep.Parse(c.Raw)
	if err != nil {
		answer("invalid", err.Error())
		return
	}
	m.mu.Lock()
	cl, ok := m.claims[cmd.Session]
	m.mu.Unlock()
	if !ok {
		answer("no-route", fmt.Sprintf("no session %q claimed in this process: it has ended, or its emitter takes no commands", cmd.Session))
		return
	}
	if why := m.outOfScope(c.By, cmd.Session); why != "" {
		answer("unauthorized", why)
		return
	}
	out := cl.t.Submit(*cmd, c.Raw, c.By)
	m.record(cmd, out)
	answer(out.Code, out.Detail)
}

// record keeps the ack a session gave cmd, for a redelivery through any
// front door (AEP-0004 §3).
func (m *Member) record(cmd *aep.Event, out plane.Outcome) {
	if out.Ack == nil || out.Duplicate || cmd.Source == "" || cmd.ID == "" {
		return
	}
	ack, err := aep.Parse(out.Ack)
	if err != nil || ack.Session == "" {
		return
	}
	m.enqueue(item{op: opRecord, key: recordKey(m.fp, cmd.Source, cmd.ID), tok: token(ack.Source, ack.Session), raw: out.Ack, keep: true})
}

// outOfScope checks again, on the session's owner, the scope of a named
// operator the front door let through: a session whose server is not in
// it, or not known here, is refused. It returns why, or "".
func (m *Member) outOfScope(by plane.Principal, session string) string {
	if len(by.Scopes) == 0 {
		return ""
	}
	scope, err := identity.ParseScope(by.Scopes)
	if err != nil {
		return "the front door sent an operator's scope that does not parse: " + err.Error()
	}
	if scope.All() {
		return "" // every server, known or not, as the front door judged it (authority.Principal.SeesSession)
	}
	if server, known := m.hub.ServerOf(session); !known || !scope.Allows(server) {
		return fmt.Sprintf("operator %q reaches the questions of servers %s only, and this session's server is not among them (or not known yet)", by.Name, scope)
	}
	return ""
}

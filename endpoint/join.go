package endpoint

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// serveJoin is GET /join: a bridge that links to this endpoint proves that
// it knows the token, after this endpoint proved it first (package proof),
// and the token itself never crosses the wire. Then the connection is an
// AEP WebSocket connection like /socket's, starting with hello (AEP-0003
// §4). A peer that fails the proof gets an error frame and nothing else.
// The upgrade, the proof and hello complete within the handshake deadline.
// At most maxProving peers prove at once: a newcomer takes the slot of a
// peer that has not sent its next frame within proveGrace (provers.go),
// and is refused with 503 when there is none.
func (e *Endpoint) serveJoin(w http.ResponseWriter, r *http.Request) {
	deadline := time.Now().Add(e.opts.handshakeWait)
	if !streamReady(w, r, true, deadline) {
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "closing", "the endpoint is shutting down; join another or later")
		return
	}
	p := e.admitLocked()
	e.mu.Unlock()
	if p == nil {
		writeError(w, http.StatusServiceUnavailable, "limit-exceeded", fmt.Sprintf(
			"%d peers are proving the token at once, the most this endpoint serves; try again in a moment", maxProving))
		return
	}
	defer e.release(p) // counts the peers proving now, not the bridges joined
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader already answered
	}
	e.mu.Lock()
	if e.closed || p.evicted {
		e.mu.Unlock()
		conn.Close()
		return
	}
	p.conn = conn
	e.mu.Unlock()
	who, op, err := e.proveJoin(conn, p, r.Host, deadline)
	if err != nil {
		e.refuseJoin(conn, p, r.RemoteAddr, err)
		return
	}
	e.release(p)
	conn.SetWriteDeadline(time.Time{})
	e.runSocket(conn, who, op, deadline)
}

// refuseJoin closes the connection of p, which did not prove the token,
// with an error frame when it sent something that is not a proof. It logs
// why, at most once per joinLogEvery with how many more failed since:
// peers without the token can fail by the thousand.
func (e *Endpoint) refuseJoin(conn *websocket.Conn, p *prover, remote string, err error) {
	e.mu.Lock()
	evicted := p.evicted
	e.joinFailures++
	now, quiet := e.opts.now(), e.joinFailures-1
	logIt := now.Sub(e.joinLogged) >= joinLogEvery
	if logIt {
		e.joinLogged, e.joinFailures = now, 0
	}
	evictions := e.evictions
	e.mu.Unlock()
	if logIt {
		e.log.Warn("a peer on /join did not prove it knows the token; closing", "remote", remote, "err", err,
			"evicted", evicted, "failed_since_last_logged", quiet, "evictions_total", evictions)
	}
	var pe *proof.Error
	if errors.As(err, &pe) {
		conn.SetWriteDeadline(time.Now().Add(time.Second))
		conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(aep.NewError("", "", "unauthorized", "token proof refused: "+pe.Error())))
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "token proof refused"), time.Now().Add(time.Second))
	}
	conn.Close()
}

// joinLogEvery spaces the warnings about peers that fail the proof.
const joinLogEvery = 10 * time.Second

// proveJoin runs the hub's side of the token proof on conn, the
// connection of p, whose request named host, by deadline. It returns who
// the peer proved to be: a bridge, with the fingerprint of the session key
// it proved with the token (proof.Hub.Key), or a named operator that
// proved its credential instead (its operator's command line), with its
// record.
func (e *Endpoint) proveJoin(conn *websocket.Conn, p *prover, host string, deadline time.Time) (authority.Principal, *identity.Operator, error) {
	conn.SetReadLimit(proof.MaxFrame)
	conn.SetReadDeadline(deadline)
	conn.SetWriteDeadline(deadline)
	hub, err := proof.NewHub(e.opts.Token, host, rand.Reader)
	if err != nil {
		return authority.Principal{}, nil, err
	}
	var op identity.Operator
	hub.AcceptCredentials(func(id string) ([]byte, []byte, bool) {
		o, salt, key, err := e.operators.Load().ProofKey(id, e.opts.now())
		op = o
		return salt, key, err == nil
	})
	challenge, err := readText(conn)
	if err != nil {
		return authority.Principal{}, nil, err
	}
	response, err := hub.Challenge(challenge)
	if err != nil {
		return authority.Principal{}, nil, err
	}
	if err := conn.WriteMessage(websocket.TextMessage, response); err != nil {
		return authority.Principal{}, nil, fmt.Errorf("sending the hub's proof: %w", err)
	}
	e.waitFor(p, true)
	finish, err := readText(conn)
	if err != nil {
		return authority.Principal{}, nil, err
	}
	if err := hub.Finish(finish); err != nil {
		return authority.Principal{}, nil, err
	}
	if hub.Credential() != "" {
		who, o, _ := e.operatorPrincipal(op, e.opts.now())
		return who, o, nil
	}
	return authority.Bridge(hub.Key()), nil, nil
}

// readText reads one text frame of the exchange.
func readText(conn *websocket.Conn) ([]byte, error) {
	kind, b, err := conn.ReadMessage()
	if err != nil {
		return nil, fmt.Errorf("reading the token proof: %w", err)
	}
	if kind != websocket.TextMessage {
		return nil, &proof.Error{Step: "token proof", Reason: "binary frames are not part of the exchange"}
	}
	return b, nil
}

package endpoint

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// maxProving bounds the connections proving the token at /join at once:
// they are the only ones an endpoint serves before it knows who is there,
// each for at most the handshake deadline.
const maxProving = 64

// serveJoin is GET /join: a bridge that links to this endpoint proves that
// it knows the token, after this endpoint proved it first (package proof),
// and the token itself never crosses the wire. Then the connection is an
// AEP WebSocket connection like /socket's, starting with hello (AEP-0003
// §4). A peer that fails the proof gets an error frame and nothing else.
// The upgrade, the proof and hello complete within the handshake deadline,
// and at most maxProving peers prove at once; more are refused with 503.
func (e *Endpoint) serveJoin(w http.ResponseWriter, r *http.Request) {
	deadline := time.Now().Add(e.opts.handshakeWait)
	if !streamReady(w, r, true, deadline) {
		return
	}
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "closing", "the endpoint is shutting down; join another or later")
		return
	case e.proving >= maxProving:
		e.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "limit-exceeded", fmt.Sprintf(
			"%d peers are proving the token at once, the most this endpoint serves; try again in a few seconds", maxProving))
		return
	}
	e.proving++ // counts the peers proving now, not the bridges joined
	e.mu.Unlock()
	proved := func() {
		e.mu.Lock()
		e.proving--
		e.mu.Unlock()
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		proved()
		return // the upgrader already answered
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		proved()
		conn.Close()
		return
	}
	e.joining[conn] = struct{}{}
	e.mu.Unlock()
	key, err := e.proveJoin(conn, r.Host, deadline)
	e.mu.Lock()
	delete(e.joining, conn)
	e.proving--
	e.mu.Unlock()
	if err != nil {
		e.log.Warn("a peer on /join did not prove it knows the token; closing", "remote", r.RemoteAddr, "err", err)
		var pe *proof.Error
		if errors.As(err, &pe) {
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(aep.NewError("", "", "unauthorized", "token proof refused: "+pe.Error())))
			conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "token proof refused"), time.Now().Add(time.Second))
		}
		conn.Close()
		return
	}
	conn.SetWriteDeadline(time.Time{})
	e.runSocket(conn, peerOf{joined: true, key: key}, deadline)
}

// proveJoin runs the hub's side of the token proof on conn, whose request
// named host, by deadline. It returns the fingerprint of the session key
// the peer proved with it, or "" (proof.Hub.Key).
func (e *Endpoint) proveJoin(conn *websocket.Conn, host string, deadline time.Time) (string, error) {
	conn.SetReadLimit(proof.MaxFrame)
	conn.SetReadDeadline(deadline)
	conn.SetWriteDeadline(deadline)
	hub, err := proof.NewHub(e.opts.Token, host, rand.Reader)
	if err != nil {
		return "", err
	}
	challenge, err := readText(conn)
	if err != nil {
		return "", err
	}
	response, err := hub.Challenge(challenge)
	if err != nil {
		return "", err
	}
	if err := conn.WriteMessage(websocket.TextMessage, response); err != nil {
		return "", fmt.Errorf("sending the hub's proof: %w", err)
	}
	finish, err := readText(conn)
	if err != nil {
		return "", err
	}
	if err := hub.Finish(finish); err != nil {
		return "", err
	}
	return hub.Key(), nil
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

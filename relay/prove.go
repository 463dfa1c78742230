package relay

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// proofWait bounds the whole token proof.
const proofWait = 10 * time.Second

// prove dials t.join without any credential and runs the bridge's side of
// the token proof, also proving key unless it is nil (proof.Key). The
// bridge sends its own proof only after the peer proved the token; on any
// failure nothing but a random nonce was sent. The connection returned is
// ready for hello.
func prove(ctx context.Context, d *websocket.Dialer, t targets, token string, key *proof.Key) (*websocket.Conn, error) {
	conn, _, err := d.DialContext(ctx, t.join, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the token proof at %s: %w", t.join, err)
	}
	conn.SetReadLimit(proof.MaxFrame)
	deadline := time.Now().Add(proofWait)
	conn.SetReadDeadline(deadline)
	conn.SetWriteDeadline(deadline)
	b, challenge, err := proof.NewBridge(token, t.host, rand.Reader)
	if err != nil {
		conn.Close()
		return nil, err
	}
	b.Claim(key)
	if err := conn.WriteMessage(websocket.TextMessage, challenge); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sending the token-proof challenge: %w", err)
	}
	_, response, err := conn.ReadMessage()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("waiting for the peer's token proof: %w", err)
	}
	finish, err := b.Verify(response)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.WriteMessage(websocket.TextMessage, finish); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sending the token proof: %w", err)
	}
	conn.SetReadLimit(maxFrame)
	conn.SetReadDeadline(time.Time{})
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

package relay

import (
	"context"
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
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
	return proveWith(ctx, d, t, func() (*proof.Bridge, []byte, error) {
		b, challenge, err := proof.NewBridge(token, t.host, rand.Reader)
		if err == nil {
			b.Claim(key)
		}
		return b, challenge, err
	})
}

// proveCredential is prove for an operator's credential (the credential
// proof, package proof): the credential never leaves the process either.
func proveCredential(ctx context.Context, d *websocket.Dialer, t targets, c identity.Presented) (*websocket.Conn, error) {
	return proveWith(ctx, d, t, func() (*proof.Bridge, []byte, error) {
		return proof.NewCredentialBridge(c.ID, c.Key, t.host, rand.Reader)
	})
}

// proveWith runs the dialing side of an exchange that start begins.
func proveWith(ctx context.Context, d *websocket.Dialer, t targets, start func() (*proof.Bridge, []byte, error)) (*websocket.Conn, error) {
	conn, err := dialJoin(ctx, d, t.join)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(proof.MaxFrame)
	deadline := time.Now().Add(proofWait)
	conn.SetReadDeadline(deadline)
	conn.SetWriteDeadline(deadline)
	b, challenge, err := start()
	if err != nil {
		conn.Close()
		return nil, err
	}
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

// dialJoin opens the token proof's WebSocket at url. While the endpoint
// answers 503, every slot for proving the token taken (by peers that may
// hold them to keep bridges out), it tries again every few tens of
// milliseconds for up to proofWait: a peer that holds a slot without
// proving anything loses it to the next one to come.
func dialJoin(ctx context.Context, d *websocket.Dialer, url string) (*websocket.Conn, error) {
	giveUp := time.Now().Add(proofWait)
	for {
		conn, resp, err := d.DialContext(ctx, url, nil)
		if err == nil {
			return conn, nil
		}
		busy := resp != nil && resp.StatusCode == http.StatusServiceUnavailable
		if !busy || time.Now().After(giveUp) {
			if busy {
				err = fmt.Errorf("%w: the endpoint answered 503 for %v, every slot for proving the token taken; try again later", err, proofWait)
			}
			return nil, fmt.Errorf("opening the token proof at %s: %w", url, err)
		}
		select {
		case <-time.After(busyPause + mathrand.N(busyPause)):
		case <-ctx.Done():
			return nil, fmt.Errorf("opening the token proof at %s: %w", url, ctx.Err())
		}
	}
}

// busyPause is the least pause before trying a busy /join again.
const busyPause = 25 * time.Millisecond

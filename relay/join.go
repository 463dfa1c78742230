package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// HubURL is the socket URL of the endpoint on a listen address, dialable:
// an unspecified host (":8787", "0.0.0.0:8787") becomes the loopback one.
func HubURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "ws://" + addr + "/socket"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "ws://" + net.JoinHostPort(host, port) + "/socket"
}

// JoinHub checks, before this bridge joins the endpoint that holds addr
// (its --listen port), that the endpoint proves it knows token (package
// proof). The token never crosses the wire; a peer that cannot prove it
// gets nothing but a discovery request and a random nonce. The error, a
// *Refusal, says what answered on addr.
func JoinHub(ctx context.Context, addr, token string, dial DialFunc) error {
	t, err := targetsOf(HubURL(addr))
	if err != nil {
		return err
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	p, err := discover(ctx, discoveryClient(dial, discoveryWait), t.discovery)
	if err != nil {
		return &Refusal{Addr: addr, What: p.what, Why: fmt.Sprintf("it did not answer AEP discovery (%v)", err)}
	}
	if !p.proof {
		return &Refusal{Addr: addr, What: p.what, Why: "it does not offer the token proof, so it cannot show that it knows this bridge's token"}
	}
	d := &websocket.Dialer{HandshakeTimeout: proofWait, NetDialContext: dial}
	conn, err := prove(ctx, d, t, token, nil)
	if err != nil {
		why := fmt.Sprintf("the token proof failed: %v", err)
		if errors.Is(err, proof.ErrMismatch) {
			why = fmt.Sprintf("it does not know this bridge's token (a bridge with another token, or an impostor): %v", err)
		}
		return &Refusal{Addr: addr, What: p.what, Why: why}
	}
	// Proven: this was a check; the link opens its own connection.
	conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	conn.Close()
	return nil
}

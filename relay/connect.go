package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// connect opens one connection to the relay, before hello. It asks the
// relay's discovery, without credentials, whether it offers the token proof:
//   - if it does, the link proves the token at {base}/join and the token
//     never crosses the wire; from then on the link never sends it in
//     clear to this URL, so an impostor that later holds the address and
//     offers no proof gets nothing; over plain ws:// off this machine, only
//     with PlainRemote (the channel after the proof is cleartext);
//   - if it does not, the bearer token goes to {base}/socket only over TLS
//     or to a loopback address, and never with RequireProof.
func (l *Link) connect(ctx context.Context) (*websocket.Conn, error) {
	p, err := discover(ctx, l.client, l.to.discovery)
	if err != nil {
		return nil, fmt.Errorf("asking %s whether it offers the token proof: %w", l.to.discovery, err)
	}
	if p.proof {
		if err := l.plainAllowed(p); err != nil {
			return nil, err
		}
		conn, err := prove(ctx, l.dialer, l.to, l.opts.Token, l.opts.Key)
		if err != nil {
			if errors.Is(err, proof.ErrMismatch) {
				return nil, &Refusal{Addr: l.to.host, What: p.what, Why: fmt.Sprintf(
					"it does not know this bridge's token (%v); pass the relay's token with --token or AEP_TOKEN", err)}
			}
			return nil, err
		}
		l.mu.Lock()
		l.proven = true
		l.mu.Unlock()
		return conn, nil
	}
	if err := l.bearerAllowed(p); err != nil {
		return nil, err
	}
	h := http.Header{"Authorization": {"Bearer " + l.opts.Token}}
	conn, resp, err := l.dialer.DialContext(ctx, l.to.socket, h)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, fmt.Errorf("the relay refused the token (401): pass the relay's token with --token or AEP_TOKEN")
		}
		return nil, fmt.Errorf("dialing: %w", err)
	}
	conn.SetReadLimit(maxFrame)
	return conn, nil
}

// maxFrame bounds one frame a relay or endpoint sends this side: its
// commands and frames are small, and an endpoint caps an event at 1 MiB.
const maxFrame = 1 << 20

// bearerAllowed says whether the bearer token may go to a peer that does not
// offer the token proof; the error, a *Refusal, says why not and what to do.
func (l *Link) bearerAllowed(p peer) error {
	l.mu.Lock()
	proven := l.proven
	l.mu.Unlock()
	switch {
	case l.opts.RequireProof:
		return &Refusal{Addr: l.to.host, What: p.what, Why: "it does not offer the token proof, so it cannot show that it knows this bridge's token"}
	case proven:
		return &Refusal{Addr: l.to.host, What: p.what, Why: "the relay at this address proved the token before and no longer offers the proof; it may be an impostor"}
	case !l.to.bearerOK:
		return &Refusal{Addr: l.to.host, What: p.what, Why: "it does not offer the token proof, and the bearer token goes only over TLS or to a loopback address; " +
			"use a wss:// (or https://) relay URL, a relay on this machine, or a relay that offers the token proof"}
	}
	return nil
}

// plainAllowed says whether the link may run over this URL to a peer that
// offers the token proof; the error, a *Refusal, says why not and what to
// do.
func (l *Link) plainAllowed(p peer) error {
	if l.to.bearerOK || l.opts.PlainRemote {
		return nil
	}
	return &Refusal{Addr: l.to.host, What: p.what, Why: "it is a plain ws:// address off this machine: the token proof authenticates only the handshake, " +
		"and after it the link is cleartext that anyone on the path can read and inject into; use a wss:// (or https://) relay URL, " +
		"or pass --relay-allow-plain to link over plain ws:// anyway"}
}

// Check asks the relay, before the link runs, whether the link may use it.
// It returns a *Refusal when the relay answered and the token could go to
// it only in clear to a remote address, or the link would be cleartext off
// this machine without PlainRemote; nil when the proof or the bearer token
// may be used, or when the relay cannot be reached yet (Run then decides on
// each connection, and refuses the same way).
func (l *Link) Check(ctx context.Context) error {
	if l.to.bearerOK && !l.opts.RequireProof {
		return nil
	}
	p, err := discover(ctx, l.client, l.to.discovery)
	switch {
	case err != nil:
		return nil
	case p.proof:
		return l.plainAllowed(p)
	}
	return l.bearerAllowed(p)
}

// Connect opens one operator's connection to an AEP endpoint (its
// socket URL, ws[s]://host:port/socket), ready for hello, without ever
// sending the token to a peer that has not proved it knows it:
//   - an endpoint that offers the token proof (every bridge's does) proves
//     it at /join, and the token never crosses the wire;
//   - one that does not gets the bearer token only over TLS (wss), where
//     the certificate authenticates it; over plain ws, loopback included
//     (a local process can hold a port), it is refused with a *Refusal
//     that says why and what to do.
//
// A plain ws:// endpoint off this machine is refused too, proof or not,
// unless opts.PlainRemote: the proof authenticates the handshake only,
// and after it the connection is cleartext, readable and injectable on
// the path.
func Connect(ctx context.Context, rawURL, token string, opts ConnectOptions) (*websocket.Conn, error) {
	dial := opts.Dial
	u, err := socketURL(rawURL)
	if err != nil {
		return nil, err
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	to, err := targetsOf(u)
	if err != nil {
		return nil, err
	}
	d := &websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: dial}
	p, err := discover(ctx, discoveryClient(dial, 0), to.discovery) // the caller's ctx bounds it
	if err != nil {
		return nil, &Unreachable{Addr: to.host, Err: err}
	}
	if p.proof {
		if !to.bearerOK && !opts.PlainRemote {
			return nil, &Refusal{Addr: to.host, What: p.what, Why: "it is a plain http:// (ws://) address off this machine: the token proof authenticates only the handshake, " +
				"and after it the connection is cleartext that anyone on the path can read and inject into; use an https:// endpoint, or pass --allow-plain to connect anyway"}
		}
		if c, cerr := identity.ParseCredential(token); cerr == nil {
			conn, err := proveCredential(ctx, d, to, c)
			if errors.Is(err, proof.ErrMismatch) {
				return nil, &Refusal{Addr: to.host, What: p.what, Why: "it does not know this operator credential: it was revoked or expired, " +
					"or added in another state folder than this bridge's; ask for a new one (operators add)"}
			}
			return conn, err
		}
		conn, err := prove(ctx, d, to, token, nil)
		if errors.Is(err, proof.ErrMismatch) {
			return nil, &Refusal{Addr: to.host, What: p.what, Why: fmt.Sprintf(
				"it does not know this token (%v); pass the bridge's token with --token or AEP_TOKEN", err)}
		}
		return conn, err
	}
	if !strings.HasPrefix(u, "wss://") {
		return nil, &Refusal{Addr: to.host, What: p.what, Why: "it does not offer the token proof, so it cannot show that it knows the token, " +
			"and without TLS nothing shows who holds the address; use a wss:// (or https://) endpoint, or a bridge's endpoint"}
	}
	conn, resp, err := d.DialContext(ctx, to.socket, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, errors.New("the endpoint refused the token (401): pass its token with --token or AEP_TOKEN")
		}
		return nil, fmt.Errorf("dialing %s: %w", to.socket, err)
	}
	conn.SetReadLimit(maxFrame)
	return conn, nil
}

// ConnectOptions tune Connect.
type ConnectOptions struct {
	// Dial opens the connections; nil means a net.Dialer.
	Dial DialFunc
	// PlainRemote allows a plain ws:// endpoint off this machine that
	// proves the token. The bearer token never goes in clear either way.
	PlainRemote bool
}

// Unreachable says nothing answered at an endpoint's address.
type Unreachable struct {
	Addr string
	Err  error
}

func (e *Unreachable) Error() string {
	return fmt.Sprintf("nothing answers at %s: %v; is a bridge running with its endpoint on?", e.Addr, e.Err)
}

func (e *Unreachable) Unwrap() error { return e.Err }

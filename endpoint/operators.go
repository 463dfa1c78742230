package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// Who a request is, on every surface that needs a credential (the
// WebSocket at /socket, the SSE stream, ingest, and discovery when
// credentials are presented):
//
//   - With Options.OperatorHeader set, a request whose TCP peer (never a
//     forwarded-for header) is in Options.TrustedProxies and that carries
//     the header is the proxy operator it names (identity.Directory.Proxy):
//     the authenticating reverse proxy vouches for the name. The header
//     from any other peer is ignored, and logged without its value (a
//     misconfigured proxy could put a token there).
//   - Otherwise the request's bearer credential (the Authorization header,
//     or ?access_token= for browsers, as for the token) is an operator
//     credential (identity's prefix says so) or the shared token.
//
// An operator's WebSocket connections and SSE streams are tracked: when
// its record changes or goes (SetOperators) or expires, they are closed
// with a reason, and its next request is refused 401.

// operatorKey is the request context's key of the operator record behind
// the principal, when the principal is a named operator.
type operatorKey struct{}

// operatorOf returns the operator r authenticated as, if any.
func operatorOf(r *http.Request) (identity.Operator, bool) {
	o, ok := r.Context().Value(operatorKey{}).(identity.Operator)
	return o, ok
}

// ErrProxies is wrapped by ParseProxies' errors.
var ErrProxies = errors.New("--trusted-proxy takes CIDRs or addresses, comma-separated")

// ParseProxies reads a --trusted-proxy list: CIDRs ("10.0.0.0/8") and
// single addresses ("10.1.2.3", "::1"), comma-separated. A CIDR must be
// written with its base address (10.0.0.0/8, not 10.1.2.3/8), so what
// is trusted is what is written.
func ParseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if len(out) >= 256 {
			return nil, fmt.Errorf("%w: at most 256 entries", ErrProxies)
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%w: %q is not an address", ErrProxies, s)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %q is not a CIDR", ErrProxies, s)
		case p.Masked() != p:
			return nil, fmt.Errorf("%w: %q has host bits set; write %s", ErrProxies, s, p.Masked())
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the list is empty", ErrProxies)
	}
	return out, nil
}

// trusted reports whether peer is in one of the prefixes. An IPv4 address
// written as IPv6 (::ffff:10.1.2.3) is its IPv4 self.
func trusted(prefixes []netip.Prefix, peer netip.Addr) bool {
	peer = peer.Unmap()
	for _, p := range prefixes {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}

// peerOf is the TCP peer of r: its RemoteAddr, as the server set it.
func peerOf(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}

// proxyName reads the operator header's values: exactly one, a valid
// name. Two values mean a proxy that appends to a header its client sent
// instead of replacing it; the request is refused rather than trusted.
func proxyName(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", errors.New("the operator header came more than once; the proxy must replace the header its client sent, not add to it")
	}
	if err := identity.ValidName(values[0]); err != nil {
		return "", fmt.Errorf("the operator header names no valid operator: %w", err)
	}
	return values[0], nil
}

// authFailure is a refused request and why, for the log: never the
// credential or a header's value.
type authFailure struct {
	reason string
	name   string // the operator's name, when it is known
}

// authenticate says who r is (see the top of this file): the principal,
// and the operator record behind it when it is a named operator. A
// failure says why, for the log.
func (e *Endpoint) authenticate(r *http.Request) (authority.Principal, *identity.Operator, *authFailure) {
	dir := e.operators.Load()
	now := e.opts.now()
	if h := e.opts.OperatorHeader; h != "" {
		if values := r.Header.Values(h); len(values) > 0 {
			peer := e.opts.peer(r)
			if trusted(e.opts.TrustedProxies, peer) {
				name, err := proxyName(values)
				if err != nil {
					return authority.Principal{}, nil, &authFailure{reason: err.Error()}
				}
				o, err := dir.Proxy(name, now)
				if err != nil {
					return authority.Principal{}, nil, &authFailure{reason: err.Error(), name: name}
				}
				return e.operatorPrincipal(o, now)
			}
			e.untrustedHeader(peer)
		}
	}
	got, _ := bearer(r)
	if identity.LooksLikeCredential(got) {
		o, err := dir.Authenticate(got, now)
		var ae *identity.AuthError
		if err == nil {
			return e.operatorPrincipal(o, now)
		}
		if !errors.As(err, &ae) || ae.Reason != identity.ReasonMalformed {
			return authority.Principal{}, nil, &authFailure{reason: err.Error(), name: ae.Name}
		}
		// Not a credential of this bridge after all: the token, maybe.
	}
	if e.tokenOK(got) {
		return authority.TokenHolder(), nil, nil
	}
	return authority.Principal{}, nil, &authFailure{reason: "no valid credential"}
}

// operatorPrincipal is the principal of operator o, whose use at now is
// recorded.
func (e *Endpoint) operatorPrincipal(o identity.Operator, now time.Time) (authority.Principal, *identity.Operator, *authFailure) {
	if e.opts.OnOperator != nil {
		e.opts.OnOperator(o.Name, now)
	}
	return authority.Operator(o), &o, nil
}

// untrustedHeader logs, at most every untrustedLogEvery, that a peer
// outside the trusted proxies sent the operator header: a client that
// tries to name itself, or a proxy missing from --trusted-proxy. The
// header's value is never logged.
func (e *Endpoint) untrustedHeader(peer netip.Addr) {
	e.opsMu.Lock()
	now := e.opts.now()
	e.untrustedSince++
	logIt := now.Sub(e.untrustedLogged) >= untrustedLogEvery
	n := e.untrustedSince
	if logIt {
		e.untrustedLogged, e.untrustedSince = now, 0
	}
	e.opsMu.Unlock()
	if logIt {
		e.log.Warn("ignored the operator header of a request from outside the trusted proxies; the request is judged by its bearer credential alone (add the proxy's address to --trusted-proxy if it is one)",
			"header", e.opts.OperatorHeader, "peer", peer.String(), "ignored_since_last_logged", n-1)
	}
}

// untrustedLogEvery spaces the warnings about untrusted operator headers.
const untrustedLogEvery = 10 * time.Second

// refused logs a refused credential, at most every untrustedLogEvery per
// reason: never the credential.
func (e *Endpoint) refused(r *http.Request, f *authFailure) {
	e.opsMu.Lock()
	now := e.opts.now()
	logIt := now.Sub(e.refusedLogged[f.reason]) >= untrustedLogEvery
	if logIt {
		e.refusedLogged[f.reason] = now
	}
	e.opsMu.Unlock()
	if logIt && f.reason != "no valid credential" {
		e.log.Warn("refused a request's credential", "reason", f.reason, "operator", f.name, "peer", e.opts.peer(r).String(), "path", r.URL.Path)
	}
}

// liveOperator is one open WebSocket connection or SSE stream of a named
// operator; end closes it with a reason.
type liveOperator struct {
	op  identity.Operator
	end func(reason string)
}

// track registers a connection or stream of operator o, which end closes.
// It reports false, registering nothing, when o is no longer current
// (revoked or changed since it authenticated): the caller then refuses to
// serve it. Call the returned func when the connection ends.
func (e *Endpoint) track(o identity.Operator, end func(reason string)) (func(), bool) {
	e.opsMu.Lock()
	defer e.opsMu.Unlock()
	if !e.operators.Load().Current(o, e.opts.now()) {
		return nil, false
	}
	l := &liveOperator{op: o, end: end}
	e.live[l] = struct{}{}
	e.scheduleExpiryLocked()
	return func() {
		e.opsMu.Lock()
		delete(e.live, l)
		e.opsMu.Unlock()
	}, true
}

// SetOperators puts d in force: every later request is authenticated by
// it, and every open connection or stream of an operator d no longer
// holds as it was (revoked, changed, expired) is closed, saying why.
func (e *Endpoint) SetOperators(d *identity.Directory) {
	if d == nil {
		d = identity.NewDirectory(nil)
	}
	e.opsMu.Lock()
	e.operators.Store(d)
	e.opsMu.Unlock()
	e.sweep()
}

// sweep closes the connections of operators no longer current, and
// schedules the next expiry.
func (e *Endpoint) sweep() {
	e.opsMu.Lock()
	d, now := e.operators.Load(), e.opts.now()
	var stale []*liveOperator
	for l := range e.live {
		if !d.Current(l.op, now) {
			stale = append(stale, l)
			delete(e.live, l)
		}
	}
	e.scheduleExpiryLocked()
	e.opsMu.Unlock()
	for _, l := range stale {
		why := "revoked or changed"
		if l.op.Expired(now) {
			why = "expired"
		}
		e.log.Info("closing a connection of an operator whose access was "+why, "operator", l.op.Name)
		l.end(fmt.Sprintf("operator %q: access %s; this connection is closed", l.op.Name, why))
	}
}

// scheduleExpiryLocked arms the timer for the earliest expiry among the
// live operators. Callers hold opsMu.
func (e *Endpoint) scheduleExpiryLocked() {
	var next time.Time
	for l := range e.live {
		if x := l.op.Expires; !x.IsZero() && (next.IsZero() || x.Before(next)) {
			next = x
		}
	}
	if e.expiry != nil {
		e.expiry.Stop()
		e.expiry = nil
	}
	if next.IsZero() || e.stopped.Load() {
		return
	}
	e.expiry = time.AfterFunc(max(next.Sub(e.opts.now()), 0), e.sweep)
}

// stopExpiry stops the expiry timer for good (Close).
func (e *Endpoint) stopExpiry() {
	e.opsMu.Lock()
	defer e.opsMu.Unlock()
	if e.expiry != nil {
		e.expiry.Stop()
		e.expiry = nil
	}
}

// operatorStreams counts the operators' live connections and streams, for
// tests.
func (e *Endpoint) operatorStreams() int {
	e.opsMu.Lock()
	defer e.opsMu.Unlock()
	return len(e.live)
}

// withOperator is r's context with the principal p and, for a named
// operator, its record.
func withOperator(ctx context.Context, p authority.Principal, o *identity.Operator) context.Context {
	ctx = context.WithValue(ctx, principalKey{}, p)
	if o != nil {
		ctx = context.WithValue(ctx, operatorKey{}, *o)
	}
	return ctx
}

// opsState is the endpoint's operator bookkeeping, guarded by opsMu.
type opsState struct {
	opsMu sync.Mutex
	// live are the operators' open connections and streams; expiry fires
	// at the earliest expiry among them.
	live   map[*liveOperator]struct{}
	expiry *time.Timer
	// untrustedLogged and untrustedSince pace the untrusted-header
	// warnings; refusedLogged the refused-credential ones, per reason.
	untrustedLogged time.Time
	untrustedSince  int
	refusedLogged   map[string]time.Time
}

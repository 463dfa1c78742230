package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
)

// Named clients (identity.Client, `aep-mcp-bridge clients add`): each MCP
// client of the gateway with a credential of its own.
//
//   - A request whose bearer value carries a credential prefix
//     (identity.LooksLikeCredential) is a named client's, or refused
//     with 401: it is never compared with the shared token. Any other
//     bearer value is the shared token, as before.
//   - A named client is a principal of its own (clientPrincipal): its
//     sessions and its input_required rounds are reachable by it alone;
//     another client, or the shared token's holder, gets 404 for its
//     session ids, and errOtherWho for its rounds.
//   - A client's record may narrow the servers it reaches (its scope), by
//     the name the gateway's sessions show: outOfScope.
//   - The directory is the identity document of the state folder, which
//     a store.Watcher follows: when a client's record is revoked, changed
//     or expires, its sessions end (each saying why) and its next request
//     gets 401.
//   - The client's name is on its sessions' log lines ("client") and on
//     every event of its sessions (aep.ExtClient). Its credential is
//     never logged: only the reason a credential was refused, and the
//     record's name when there is one.

// clientPrincipal is the principal of a named client: its name and its
// credential's public id, so a record revoked and added again under the
// same name reaches none of the old record's sessions or rounds. It holds
// no secret, so it may be logged.
func clientPrincipal(c identity.Client) principal {
	return principal("client:" + c.Name + ":" + c.Credential.ID)
}

// outOfScope says why client may not use this gateway, or "": its scope
// reaches every server, or the name every session of the gateway shows
// (Options.Session.Name, --name) is in it. A scoped client of a gateway
// whose sessions take their name from the server itself is refused, since
// nothing the server says can be checked before the client reaches it:
// failing closed.
func (s *Server) outOfScope(c *identity.Client) string {
	name := s.opts.Session.Name
	switch {
	case c.Servers.All():
		return ""
	case name == "":
		return fmt.Sprintf("client %q may use only the MCP servers %s, and this gateway's server has no fixed name to check; its administrator starts it with --name NAME", c.Name, c.Servers)
	case !c.Servers.Allows(name):
		return fmt.Sprintf("client %q may use only the MCP servers %s, not %q; use a client credential whose --servers reach it", c.Name, c.Servers, name)
	}
	return ""
}

// refusedLogEvery spaces the log lines about refused credentials, per
// reason.
const refusedLogEvery = 10 * time.Second

// bearerOf returns the value of r's Authorization: Bearer header, if any.
func bearerOf(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// authenticateClient authenticates a presented client credential against
// the directory in force. It returns the client, or why it was refused:
// what the client is told, which never quotes the credential.
func (s *Server) authenticateClient(text string) (identity.Client, string) {
	now := time.Now()
	c, err := s.clients.Load().AuthenticateClient(text, now)
	if err != nil {
		reason, name := "refused", ""
		var ae *identity.AuthError
		if errors.As(err, &ae) {
			reason, name = ae.Reason.String(), ae.Name
		}
		s.refused(reason, name)
		return identity.Client{}, "the client credential was refused: " + err.Error() + "; ask the gateway's administrator for one (aep-mcp-bridge clients add NAME)"
	}
	if s.ids != nil {
		s.ids.Used(store.ClientKey(c.Name), now)
	}
	return c, ""
}

// refused logs a refused client, at most every refusedLogEvery per
// reason: the reason and the record's name, never the credential.
func (s *Server) refused(reason, name string) {
	s.refusedMu.Lock()
	now := time.Now()
	logIt := now.Sub(s.refusedLogged[reason]) >= refusedLogEvery
	if logIt {
		s.refusedLogged[reason] = now
	}
	s.refusedMu.Unlock()
	if logIt {
		s.log.Warn("refused a named client", "reason", reason, "client", name)
	}
}

// SetClients puts d in force: every later request is authenticated by it,
// and every session of a named client d no longer holds as it was
// (revoked, changed, expired) ends, saying why. A nil d holds no client.
func (s *Server) SetClients(d *identity.Directory) {
	if d == nil {
		d = identity.NewDirectory(nil)
	}
	s.clients.Store(d)
	s.sweepClients()
}

// sweepClients ends the sessions of clients no longer current, and arms
// the timer for the next expiry among the clients with sessions.
func (s *Server) sweepClients() {
	d, now := s.clients.Load(), time.Now()
	var stale []*session
	var next time.Time
	s.mu.Lock()
	for _, sess := range s.sessions {
		c := sess.client
		switch {
		case c == nil:
		case !d.CurrentClient(*c, now):
			stale = append(stale, sess)
		case !c.Expires.IsZero() && (next.IsZero() || c.Expires.Before(next)):
			next = c.Expires
		}
	}
	if s.expiry != nil {
		s.expiry.Stop()
		s.expiry = nil
	}
	if !next.IsZero() && !s.closed {
		s.expiry = time.AfterFunc(max(next.Sub(now), 0), s.sweepClients)
	}
	s.mu.Unlock()
	for _, sess := range stale {
		why := "revoked or changed"
		if sess.client.Expired(now) {
			why = "expired"
		}
		sess.mu.Lock()
		log := sess.log // set once its bridge session started
		sess.mu.Unlock()
		log.Info("ending a session of a client whose access was " + why)
		sess.end(fmt.Sprintf("client %q: access %s; the session ended", sess.client.Name, why))
	}
}

// watchClients is the identity document's watcher goroutine; Close stops
// it.
func (s *Server) watchClients(ctx context.Context) {
	defer close(s.idsDone)
	s.ids.Run(ctx)
}

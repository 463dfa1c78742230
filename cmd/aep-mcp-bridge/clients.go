package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
)

// The clients subcommands: named MCP clients of the gateway (serve), each
// with a credential the bridge generates, an optional scope of server
// globs and an optional expiry. The records live in the state folder
// (identity/store), hashed, beside the operators; every gateway serving
// from that folder follows them within a second.

const clientsAbout = `Named clients of the gateway (aep-mcp-bridge serve) each connect with a
credential of their own, printed once by add, instead of the shared client
token: each reaches only the sessions it opened, and its name is on every
event of its sessions and in the gateway's log. The shared client token
keeps working as before.

Subcommands:
  add NAME [--servers GLOB,...] [--expires D]
  list [--json]
  revoke NAME

Every gateway that serves from this state folder follows the change within
a second: a revoked client's sessions end, and its next request gets 401.

With --nats (and the fleet's token), the records live on the operator
plane instead, and every gateway of the fleet follows them.`

// runClients is `aep-mcp-bridge clients SUBCOMMAND`.
func runClients(ctx context.Context, args []string, s stdio) error {
	return runRecords("clients", clientsAbout, args, s, clientsAdd, clientsList, clientsRevoke)
}

func clientsAdd(args []string, s stdio) error {
	fs := newFlagSet("clients add", "clients add NAME [--servers GLOB,...] [--expires D]",
		"Adds a named client of the gateway and prints its credential once, on stdout: give it to the MCP client\n"+
			"as its bearer token (Authorization: Bearer CREDENTIAL); it is not stored in clear and cannot be shown again.")
	var servers listFlag
	fs.Var(&servers, "servers", "the MCP servers it may use, by the name their sessions show: globs, comma-separated or repeated (deploy-*,billing); default every server")
	expires := fs.String("expires", "", "when its access ends: a duration (12h), days (30d) or a date (2026-12-31); default never")
	st := defineStore(fs, "the gateways it uses")
	name, err := parseNamed(fs, args, s, "client")
	if err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(s.err, "aep-mcp-bridge clients add: "+format+"\n", a...)
		return errUsage
	}
	scope, now, until, err := recordFlags(servers, *expires, bad)
	if err != nil {
		return err
	}
	rs, err := st.open(context.Background())
	if err != nil {
		return err
	}
	defer rs.Close()
	path := rs.where
	credential, v, err := identity.NewCredential(identity.KindClient, rand.Reader)
	if err != nil {
		return err
	}
	c := identity.Client{Name: name, Servers: scope, Created: now, Expires: until, Credential: v}
	if err := rs.update(context.Background(), func(d *identity.Document) error { return d.AddClient(c) }); err != nil {
		return fmt.Errorf("clients add: %w", err)
	}
	fmt.Fprintf(s.err, "Added client %s: servers %s, %s (%s).\n", name, scope, expiryText(until), path)
	fmt.Fprintf(s.err, "Its credential follows, once: give it to %s and keep no other copy. The MCP client sends it as\n"+
		"Authorization: Bearer CREDENTIAL to the gateway (aep-mcp-bridge serve).\n", name)
	fmt.Fprintln(s.out, credential)
	return nil
}

// clientJSON is one client as list --json shows it: never its
// credential, nor its hash.
type clientJSON struct {
	Name    string     `json:"name"`
	Servers []string   `json:"servers"`
	Created time.Time  `json:"created"`
	LastUse *time.Time `json:"last_use,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	Expired bool       `json:"expired,omitempty"`
}

func clientsList(args []string, s stdio) error {
	fs := newFlagSet("clients list", "clients list [--json]",
		"Lists the named clients of the gateway: name, servers, when it was added, last used (by a gateway serving\n"+
			"from this state folder) and expires. Never a credential.")
	l, err := parseList(fs, args, s, "clients", "the gateways")
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]clientJSON, 0, len(l.doc.Clients))
	for _, c := range l.doc.Clients {
		out = append(out, clientJSON{Name: c.Name, Servers: c.Servers.Patterns(), Created: c.Created, Expired: c.Expired(now),
			LastUse: l.lastUse(store.ClientKey(c.Name)), Expires: timeOrNil(c.Expires)})
	}
	if l.asJSON {
		return printJSON(s, out)
	}
	path := l.path
	if len(out) == 0 {
		fmt.Fprintf(s.out, "no named clients in %s; only the shared client token opens the gateway (clients add NAME adds one)\n", path)
		return nil
	}
	w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSERVERS\tCREATED\tLAST USE\tEXPIRES")
	for _, j := range out {
		created := j.Created
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", j.Name, strings.Join(j.Servers, ","), listTime(&created), listTime(j.LastUse), listExpiry(j.Expires, j.Expired))
	}
	return w.Flush()
}

func clientsRevoke(args []string, s stdio) error {
	fs := newFlagSet("clients revoke", "clients revoke NAME",
		"Ends a named client's access: its credential opens nothing any more, and every gateway serving from this\n"+
			"state folder ends its sessions within a second.")
	name, path, err := revokeRecord(fs, args, s, "client", "the gateways", (*identity.Document).RemoveClient)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.err, "Revoked client %s: gateways serving from %s end its sessions within a second.\n", name, path)
	return nil
}

// revokeRecord parses KINDs revoke NAME (--state-dir of whose, "the
// bridges" or "the gateways") and removes the record of kind named NAME
// with remove; it says so when there is none. It returns the name and
// the document's path.
func revokeRecord(fs *flag.FlagSet, args []string, s stdio, kind, whose string, remove func(*identity.Document, string) bool) (string, string, error) {
	st := defineStore(fs, whose)
	name, err := parseNamed(fs, args, s, kind)
	if err != nil {
		return "", "", err
	}
	rs, err := st.open(context.Background())
	if err != nil {
		return "", "", err
	}
	defer rs.Close()
	path := rs.where
	errNone := errors.New("none")
	err = rs.update(context.Background(), func(d *identity.Document) error {
		if !remove(d, name) {
			return errNone
		}
		return nil
	})
	switch {
	case errors.Is(err, errNone):
		return "", "", fmt.Errorf("%ss revoke: no %s is named %q in %s; %ss list shows them", kind, kind, name, path, kind)
	case err != nil:
		return "", "", fmt.Errorf("%ss revoke: %w", kind, err)
	}
	return name, path, nil
}

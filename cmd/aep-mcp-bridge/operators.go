package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
)

// The operators subcommands: named operators, each with a right (read or
// answer), a scope of server globs and an optional expiry, who open the
// endpoint with a credential the bridge generates, or by a name a trusted
// proxy sends (--proxy). The records live in the state folder
// (identity/store), hashed; every running bridge that serves an endpoint
// from that folder follows them within a second.

const operatorsAbout = `Named operators read, and answer, the questions of the MCP servers in their
scope; what they answer is recorded under their name. Each one opens the
inbox, /socket and /stream with a credential printed once by add (or, with
--proxy, by the name an authenticating reverse proxy sends in
--operator-header). The shared token keeps working as before.

Subcommands:
  add NAME [--can answer|read] [--servers GLOB,...] [--group G]... [--expires D] [--proxy]
  list [--json]
  revoke NAME

Every running bridge that serves its endpoint from this state folder
follows the change within a second: a revoked operator's open connections
close, and its next request is refused.

With --nats (and the fleet's token), the records live on the operator
plane instead, and every front door of the fleet follows them: an operator
added on one machine opens any door, and a revocation on any machine
closes its connections on every door.`

// runOperators is `aep-mcp-bridge operators SUBCOMMAND`.
func runOperators(ctx context.Context, args []string, s stdio) error {
	return runRecords("operators", operatorsAbout, args, s, operatorsAdd, operatorsList, operatorsRevoke)
}

// runRecords is `aep-mcp-bridge KIND SUBCOMMAND` for the records of the
// identity document: add, list or revoke.
func runRecords(kind, about string, args []string, s stdio, add, list, revoke func([]string, stdio) error) error {
	fs := newFlagSet(kind, kind+" (add|list|revoke) [flags]", about)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := parseArgs(fs, args, s); err != nil {
			return err
		}
		fmt.Fprintf(s.err, "aep-mcp-bridge %s: give a subcommand: add, list or revoke\n", kind)
		fs.SetOutput(s.err)
		fs.Usage()
		return errUsage
	}
	switch args[0] {
	case "add":
		return add(args[1:], s)
	case "list":
		return list(args[1:], s)
	case "revoke":
		return revoke(args[1:], s)
	}
	fmt.Fprintf(s.err, "aep-mcp-bridge %s: %q is not a subcommand; give add, list or revoke\n", kind, args[0])
	return errUsage
}

// parseNamed parses a subcommand that takes the NAME of a record of kind
// ("operator", "client"), before or among its flags; the name is
// returned checked.
func parseNamed(fs *flag.FlagSet, args []string, s stdio, kind string) (string, error) {
	if err := parseArgs(fs, args, s); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(s.err, "aep-mcp-bridge %s: give the %s's NAME\n", fs.Name(), kind)
		fs.Usage()
		return "", errUsage
	}
	name := fs.Arg(0)
	if err := parseArgs(fs, fs.Args()[1:], s); err != nil {
		return "", err
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(s.err, "aep-mcp-bridge %s: unexpected argument %q after the name\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return "", errUsage
	}
	if err := identity.ValidName(name); err != nil {
		fmt.Fprintf(s.err, "aep-mcp-bridge %s: %v\n", fs.Name(), err)
		return "", errUsage
	}
	return name, nil
}

// identitiesPath is the identity document of the state folder flagged.
func identitiesPath(state string) (string, error) {
	dir, err := stateDir(state)
	if err != nil {
		return "", err
	}
	return store.Path(dir), nil
}

func operatorsAdd(args []string, s stdio) error {
	fs := newFlagSet("operators add", "operators add NAME [--can answer|read] [--servers GLOB,...] [--group G]... [--expires D] [--proxy]",
		"Adds a named operator. Without --proxy it prints the operator's credential once, on stdout: give it to the\n"+
			"operator (the inbox opens with #token=CREDENTIAL; the CLI takes it as AEP_TOKEN), it is not stored in clear\n"+
			"and cannot be shown again. With --proxy the operator has no credential: its name comes from the header an\n"+
			"authenticating reverse proxy sets (--operator-header, --trusted-proxy on the bridge).")
	can := fs.String("can", "answer", "answer (read and answer) or read (see questions and history, answer nothing)")
	var servers listFlag
	fs.Var(&servers, "servers", "the MCP servers it reaches, by the name the session shows: globs, comma-separated or repeated (deploy-*,billing); default every server")
	var groups listFlag
	fs.Var(&groups, "group", "a group it is in, which a policy's approvers name as group:G: repeated or comma-separated (oncall,sre); default none")
	expires := fs.String("expires", "", "when its access ends: a duration (12h), days (30d) or a date (2026-12-31); default never")
	proxy := fs.Bool("proxy", false, "no credential: the name comes from a trusted proxy's --operator-header")
	st := defineStore(fs, "the bridges it opens")
	name, err := parseNamed(fs, args, s, "operator")
	if err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(s.err, "aep-mcp-bridge operators add: "+format+"\n", a...)
		return errUsage
	}
	right, err := identity.ParseRight(*can)
	if err != nil {
		return bad("--can: %v", err)
	}
	member, err := identity.ParseGroups(groups.items())
	if err != nil {
		return bad("--group: %v", err)
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
	o := identity.Operator{Name: name, Can: right, Servers: scope, Groups: member, Created: now, Expires: until, Proxy: *proxy}
	var credential string
	if !*proxy {
		var v identity.Verifier
		if credential, v, err = identity.NewCredential(identity.KindOperator, rand.Reader); err != nil {
			return err
		}
		o.Credential = &v
	}
	if err := rs.update(context.Background(), func(d *identity.Document) error { return d.AddOperator(o) }); err != nil {
		return fmt.Errorf("operators add: %w", err)
	}
	fmt.Fprintf(s.err, "Added operator %s: can %s, servers %s, %s, %s (%s).\n", name, right, scope, groupsText(member), expiryText(until), path)
	if *proxy {
		fmt.Fprintf(s.err, "It signs in through the reverse proxy that sends its name in --operator-header; it has no credential.\n")
		return nil
	}
	fmt.Fprintf(s.err, "Its credential follows, once: give it to %s and keep no other copy. It opens the inbox at\n"+
		"http://HOST:PORT/#token=CREDENTIAL and the CLI with AEP_TOKEN=CREDENTIAL.\n", name)
	fmt.Fprintln(s.out, credential)
	return nil
}

// recordFlags reads the --servers and --expires of a record being added,
// as of now; bad reports a usage error.
func recordFlags(servers listFlag, expires string, bad func(string, ...any) error) (identity.Scope, time.Time, time.Time, error) {
	scope, err := identity.ParseScope(servers.items())
	if err != nil {
		return identity.Scope{}, time.Time{}, time.Time{}, bad("--servers: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	var until time.Time
	if expires != "" {
		if until, err = identity.ParseExpiry(expires, now); err != nil {
			return identity.Scope{}, time.Time{}, time.Time{}, bad("--expires: %v", err)
		}
	}
	return scope, now, until, nil
}

func groupsText(groups []string) string {
	if len(groups) == 0 {
		return "in no group"
	}
	return "groups " + strings.Join(groups, ",")
}

func expiryText(t time.Time) string {
	if t.IsZero() {
		return "never expires"
	}
	return "expires " + t.Format(time.RFC3339)
}

// operatorJSON is one operator as list --json shows it: never its
// credential, nor its hash.
type operatorJSON struct {
	Name    string     `json:"name"`
	Can     string     `json:"can"`
	Servers []string   `json:"servers"`
	Groups  []string   `json:"groups"`
	Auth    string     `json:"auth"`
	Created time.Time  `json:"created"`
	LastUse *time.Time `json:"last_use,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	Expired bool       `json:"expired,omitempty"`
}

func operatorsList(args []string, s stdio) error {
	fs := newFlagSet("operators list", "operators list [--json]",
		"Lists the named operators: name, right, servers, groups, how it signs in (credential or proxy), when it was added,\n"+
			"last used (by a bridge serving the endpoint from this state folder) and expires. Never a credential.")
	l, err := parseList(fs, args, s, "operators", "the bridges")
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]operatorJSON, 0, len(l.doc.Operators))
	for _, o := range l.doc.Operators {
		j := operatorJSON{Name: o.Name, Can: o.Can.String(), Servers: o.Servers.Patterns(), Groups: append([]string{}, o.Groups...),
			Auth: "credential", Created: o.Created, Expired: o.Expired(now), LastUse: l.lastUse(store.OperatorKey(o.Name)), Expires: timeOrNil(o.Expires)}
		if o.Proxy {
			j.Auth = "proxy"
		}
		out = append(out, j)
	}
	if l.asJSON {
		return printJSON(s, out)
	}
	path := l.path
	if len(out) == 0 {
		fmt.Fprintf(s.out, "no named operators in %s; only the shared token opens the endpoint (operators add NAME adds one)\n", path)
		return nil
	}
	w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tCAN\tSERVERS\tGROUPS\tAUTH\tCREATED\tLAST USE\tEXPIRES")
	for _, j := range out {
		created := j.Created
		groups := strings.Join(j.Groups, ",")
		if groups == "" {
			groups = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, j.Can, strings.Join(j.Servers, ","), groups, j.Auth,
			listTime(&created), listTime(j.LastUse), listExpiry(j.Expires, j.Expired))
	}
	return w.Flush()
}

// listing is what a list subcommand reads: the identity document at
// path, and when each record was last used.
type listing struct {
	path   string
	doc    *identity.Document
	seen   store.Seen
	asJSON bool
}

// parseList parses the flags of KIND list (--json, --state-dir of whose,
// "the bridges" or "the gateways") and loads what it lists.
func parseList(fs *flag.FlagSet, args []string, s stdio, kind, whose string) (*listing, error) {
	asJSON := fs.Bool("json", false, "print the "+kind+" as JSON")
	st := defineStore(fs, whose)
	if err := parseArgs(fs, args, s); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, noArguments(fs, s)
	}
	rs, err := st.open(context.Background())
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	d, seen, err := rs.load(context.Background())
	if err != nil {
		return nil, err
	}
	return &listing{path: rs.where, doc: d, seen: seen, asJSON: *asJSON}, nil
}

// lastUse is when the record key was last used, or nil.
func (l *listing) lastUse(key string) *time.Time {
	if t, ok := l.seen[key]; ok {
		return &t
	}
	return nil
}

// timeOrNil is t, or nil for the zero time.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// printJSON prints v as indented JSON on stdout.
func printJSON(s stdio, v any) error {
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// listTime is a time in a list: local, to the minute; "-" for none.
func listTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// listExpiry is an expiry in a list, marked when it has passed.
func listExpiry(t *time.Time, expired bool) string {
	if expired {
		return listTime(t) + " (expired)"
	}
	return listTime(t)
}

func operatorsRevoke(args []string, s stdio) error {
	fs := newFlagSet("operators revoke", "operators revoke NAME",
		"Ends a named operator's access: its credential (or its proxy name) opens nothing any more, and every\n"+
			"running bridge serving the endpoint from this state folder closes its open connections within a second.")
	name, path, err := revokeRecord(fs, args, s, "operator", "the bridges", (*identity.Document).RemoveOperator)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.err, "Revoked operator %s: bridges serving from %s close its connections within a second.\n", name, path)
	return nil
}

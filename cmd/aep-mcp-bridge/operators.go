package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
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
close, and its next request is refused.`

// runOperators is `aep-mcp-bridge operators SUBCOMMAND`.
func runOperators(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("operators", "operators (add|list|revoke) [flags]", operatorsAbout)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := parseArgs(fs, args, s); err != nil {
			return err
		}
		fmt.Fprintln(s.err, "aep-mcp-bridge operators: give a subcommand: add, list or revoke")
		fs.SetOutput(s.err)
		fs.Usage()
		return errUsage
	}
	switch args[0] {
	case "add":
		return operatorsAdd(args[1:], s)
	case "list":
		return operatorsList(args[1:], s)
	case "revoke":
		return operatorsRevoke(args[1:], s)
	}
	fmt.Fprintf(s.err, "aep-mcp-bridge operators: %q is not a subcommand; give add, list or revoke\n", args[0])
	return errUsage
}

// parseNamed parses a subcommand that takes one NAME, before or among its
// flags; the name is returned checked.
func parseNamed(fs *flag.FlagSet, args []string, s stdio) (string, error) {
	if err := parseArgs(fs, args, s); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(s.err, "aep-mcp-bridge %s: give the operator's NAME\n", fs.Name())
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
	state := fs.String("state-dir", "", "the state folder of the bridges it opens; default the bridge's")
	name, err := parseNamed(fs, args, s)
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
	scope, err := identity.ParseScope(servers.items())
	if err != nil {
		return bad("--servers: %v", err)
	}
	member, err := identity.ParseGroups(groups.items())
	if err != nil {
		return bad("--group: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	var until time.Time
	if *expires != "" {
		if until, err = identity.ParseExpiry(*expires, now); err != nil {
			return bad("--expires: %v", err)
		}
	}
	path, err := identitiesPath(*state)
	if err != nil {
		return err
	}
	o := identity.Operator{Name: name, Can: right, Servers: scope, Groups: member, Created: now, Expires: until, Proxy: *proxy}
	var credential string
	if !*proxy {
		var v identity.Verifier
		if credential, v, err = identity.NewCredential(identity.KindOperator, rand.Reader); err != nil {
			return err
		}
		o.Credential = &v
	}
	if err := store.Update(path, func(d *identity.Document) error { return d.AddOperator(o) }); err != nil {
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
	asJSON := fs.Bool("json", false, "print the operators as JSON")
	state := fs.String("state-dir", "", "the state folder of the bridges; default the bridge's")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return noArguments(fs, s)
	}
	path, err := identitiesPath(*state)
	if err != nil {
		return err
	}
	d, err := store.Load(path)
	if err != nil {
		return err
	}
	seen := store.LoadSeen(filepath.Dir(path))
	now := time.Now()
	out := make([]operatorJSON, 0, len(d.Operators))
	for _, o := range d.Operators {
		j := operatorJSON{Name: o.Name, Can: o.Can.String(), Servers: o.Servers.Patterns(), Groups: append([]string{}, o.Groups...),
			Auth: "credential", Created: o.Created, Expired: o.Expired(now)}
		if o.Proxy {
			j.Auth = "proxy"
		}
		if t, ok := seen[store.OperatorKey(o.Name)]; ok {
			j.LastUse = &t
		}
		if !o.Expires.IsZero() {
			j.Expires = &o.Expires
		}
		out = append(out, j)
	}
	if *asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(out) == 0 {
		fmt.Fprintf(s.out, "no named operators in %s; only the shared token opens the endpoint (operators add NAME adds one)\n", path)
		return nil
	}
	w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tCAN\tSERVERS\tGROUPS\tAUTH\tCREATED\tLAST USE\tEXPIRES")
	day := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	for _, j := range out {
		exp := day(j.Expires)
		if j.Expired {
			exp += " (expired)"
		}
		created := j.Created
		groups := strings.Join(j.Groups, ",")
		if groups == "" {
			groups = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, j.Can, strings.Join(j.Servers, ","), groups, j.Auth, day(&created), day(j.LastUse), exp)
	}
	return w.Flush()
}

func operatorsRevoke(args []string, s stdio) error {
	fs := newFlagSet("operators revoke", "operators revoke NAME",
		"Ends a named operator's access: its credential (or its proxy name) opens nothing any more, and every\n"+
			"running bridge serving the endpoint from this state folder closes its open connections within a second.")
	state := fs.String("state-dir", "", "the state folder of the bridges; default the bridge's")
	name, err := parseNamed(fs, args, s)
	if err != nil {
		return err
	}
	path, err := identitiesPath(*state)
	if err != nil {
		return err
	}
	errNone := errors.New("none")
	err = store.Update(path, func(d *identity.Document) error {
		if !d.RemoveOperator(name) {
			return errNone
		}
		return nil
	})
	switch {
	case errors.Is(err, errNone):
		return fmt.Errorf("operators revoke: no operator is named %q in %s; operators list shows them", name, path)
	case err != nil:
		return fmt.Errorf("operators revoke: %w", err)
	}
	fmt.Fprintf(s.err, "Revoked operator %s: bridges serving from %s close its connections within a second.\n", name, path)
	return nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// Exit statuses of the operator commands (README "Operators").
const (
	exitFailure     = 1 // any other error: the token refused or unsafe, input ended
	exitUsage       = 2 // a command-line error
	exitRejected    = 3 // the bridge rejected the answer, or the question is not open
	exitNoAck       = 4 // the answer was sent and no ack came within --wait
	exitUnreachable = 5 // the endpoint could not be reached; nothing was sent
)

// exitError carries a specific exit status (respond's 3 and 4).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// operatorExits documents the exit statuses of the operator commands.
const operatorExits = "Exit status: 0 done, 1 an error (the token refused or unsafe), 2 a command-line error,\n" +
	"5 the endpoint could not be reached."

// noArguments is the usage error of a command that takes no arguments.
func noArguments(fs *flag.FlagSet, s stdio) error {
	fmt.Fprintf(s.err, "aep-mcp-bridge %s: unexpected argument %q; it takes flags only\n", fs.Name(), fs.Arg(0))
	fs.Usage()
	return errUsage
}

// defaultEndpoint is the embedded endpoint's address (--listen's default).
const defaultEndpoint = "http://127.0.0.1:8787"

// clientArgs are the flags every operator subcommand takes.
type clientArgs struct {
	endpoint, token, state string
	// allowPlain lets a command reach an endpoint off this machine over
	// plain http (relay.ConnectOptions.PlainRemote).
	allowPlain bool
}

// clientFlags registers the flags every operator subcommand takes.
func clientFlags(fs *flag.FlagSet) *clientArgs {
	a := &clientArgs{}
	fs.StringVar(&a.endpoint, "endpoint", defaultEndpoint, "the AEP endpoint's base URL")
	fs.StringVar(&a.token, "token", "", "bearer token (default: AEP_TOKEN, else the token the local bridge stored)")
	fs.StringVar(&a.state, "state-dir", "", "where the local bridge stores its token")
	fs.BoolVar(&a.allowPlain, "allow-plain", false, "reach an endpoint off this machine over plain http:// (cleartext after the token proof); default: https only")
	return a
}

// clientToken resolves an operator command's token: --token, AEP_TOKEN,
// else the stored one, which is refused when other users could read it.
func clientToken(token, state string) (string, error) {
	if token == "" {
		token = os.Getenv("AEP_TOKEN")
	}
	if token != "" {
		return token, nil
	}
	dir, err := stateDir(state)
	if err != nil {
		return "", err
	}
	t, _, err := readTokenFile(dir, "token")
	if err != nil {
		return "", err
	}
	if t == "" {
		return "", fmt.Errorf("no token in %s yet: a bridge stores one there when it first starts, which for a wrapped server is when "+
			"your MCP client starts it (start or restart the client), or run aep-mcp-bridge demo; or pass --token, or set AEP_TOKEN", dir)
	}
	return t, nil
}

func newClient(a *clientArgs) (*operator.Client, error) {
	t, err := clientToken(a.token, a.state)
	if err != nil {
		return nil, err
	}
	return &operator.Client{Endpoint: a.endpoint, Token: t, PlainRemote: a.allowPlain}, nil
}

// runPending is `aep-mcp-bridge pending [--json]`.
func runPending(ctx context.Context, args []string, s stdio) error {
	stdout := s.out
	fs := newFlagSet("pending", "pending [--json] [--endpoint URL] [--token T]",
		"Lists the questions open at the endpoint: id, age, server, kind and prompt. Permission requests\n"+
			"(tool calls an approval policy holds) are listed too, with the tool beside the server; answer them\n"+
			"with approve and deny.\n"+operatorExits)
	ca := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print the questions as JSON, with each one's options and fields")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return noArguments(fs, s)
	}
	c, err := newClient(ca)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	qs, err := c.Pending(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(qs); err != nil {
			return err
		}
		_, err := stdout.Write(jsonSafe(b.Bytes()))
		return err
	}
	if len(qs) == 0 {
		fmt.Fprintln(stdout, "no pending questions")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGE\tSERVER\tKIND\tPROMPT")
	for _, q := range qs {
		server := q.Server
		if q.Tool != "" { // a permission request: the held call's tool
			server += " · " + q.Tool
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", oneLine(q.ID, 40), time.Since(q.Asked).Round(time.Second), oneLine(server, 30),
			oneLine(q.Kind, 10), oneLine(q.Prompt, 60))
	}
	return w.Flush()
}

// oneLine makes s one printable line of at most n characters.
func oneLine(s string, n int) string {
	s = printable(strings.Join(strings.Fields(s), " "), false)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// runTail is `aep-mcp-bridge tail [--filter JSON] [--json]`.
func runTail(ctx context.Context, args []string, s stdio) error {
	stdout, stderr := s.out, s.err
	fs := newFlagSet("tail", "tail [--filter JSON] [--json] [--endpoint URL] [--token T]",
		"Prints the endpoint's events as they happen, one line each, until interrupted.\n"+operatorExits)
	ca := clientFlags(fs)
	filter := fs.String("filter", "", `an attr-match filter, e.g. '{"type":["attention.*"]}'`)
	asJSON := fs.Bool("json", false, "print raw event lines")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return noArguments(fs, s)
	}
	if *filter != "" {
		if _, err := aep.ParseFilter([]byte(*filter)); err != nil {
			fmt.Fprintln(stderr, "aep-mcp-bridge tail: --filter:", err)
			return errUsage
		}
	}
	c, err := newClient(ca)
	if err != nil {
		return err
	}
	var f json.RawMessage
	if *filter != "" {
		f = json.RawMessage(*filter)
	}
	err = c.Stream(ctx, operator.StreamOptions{Filter: f}, func(ev *aep.Event, raw []byte) bool {
		if *asJSON {
			fmt.Fprintf(stdout, "%s\n", jsonSafe(raw))
		} else {
			fmt.Fprintln(stdout, describe(ev))
		}
		return true
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// describe renders one event as a readable line. Every string in it comes
// from a peer, so the whole line is made printable.
func describe(ev *aep.Event) string {
	t, _ := time.Parse(time.RFC3339Nano, ev.Time)
	var d map[string]any
	json.Unmarshal(ev.Data, &d)
	extra := ""
	switch ev.Type {
	case "attention.requested":
		extra = fmt.Sprintf("%v", d["prompt"])
	case "attention.answered":
		b, _ := json.Marshal(d["answer"])
		extra = fmt.Sprintf("by %v via %v: %s", d["by"], d["via"], b)
	case "attention.resolved":
		extra = fmt.Sprintf("%v after %vms", d["resolution"], d["latency_ms"])
	case "control.rejected":
		extra = fmt.Sprintf("%v: %v", d["reason"], d["detail"])
	case "session.started":
		b, _ := json.Marshal(d["client"])
		extra = "client " + string(b)
	}
	subj := ev.Subject
	if subj == "" {
		subj = "-"
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %-22s %s %s", t.Local().Format("15:04:05"), oneLine(ev.Session, 80),
		oneLine(ev.Type, 60), oneLine(subj, 80), oneLine(extra, 100)))
}

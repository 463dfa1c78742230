package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// exitError carries a specific exit status (respond's 3 and 4).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// clientFlags are the flags every operator subcommand takes.
func clientFlags(fs *flag.FlagSet) (endpoint, token, state *string) {
	endpoint = fs.String("endpoint", "http://127.0.0.1:8787", "the AEP endpoint's base URL")
	token = fs.String("token", "", "bearer token (default: AEP_TOKEN, else the token the local bridge stored)")
	state = fs.String("state-dir", "", "where the local bridge stores its token")
	return
}

func newClient(endpoint, token, state string) (*operator.Client, error) {
	if token == "" {
		token = os.Getenv("AEP_TOKEN")
	}
	if token == "" {
		dir, err := stateDir(state)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(dir + "/token")
		if err != nil {
			return nil, fmt.Errorf("no token: pass --token, set AEP_TOKEN, or run a bridge once so it stores one in %s", dir)
		}
		token = strings.TrimSpace(string(b))
	}
	return &operator.Client{Endpoint: endpoint, Token: token}, nil
}

func subcommandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: aep-mcp-bridge %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// runPending is `aep-mcp-bridge pending [--json]`.
func runPending(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("pending", "pending [--json] [--endpoint URL] [--token T]", stderr)
	endpoint, token, state := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print the questions as JSON")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return errUsage
	}
	c, err := newClient(*endpoint, *token, *state)
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
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(qs)
	}
	if len(qs) == 0 {
		fmt.Fprintln(stdout, "no pending questions")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGE\tSERVER\tPROMPT")
	for _, q := range qs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", q.ID, time.Since(q.Asked).Round(time.Second), q.Server, oneLine(q.Prompt, 60))
	}
	return w.Flush()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// runRespond is `aep-mcp-bridge respond ID (--values JSON | --decline | --cancel | --text S)`.
func runRespond(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	r, err := parseRespond(args, stderr)
	if err != nil {
		return err
	}
	c, err := newClient(r.endpoint, r.token, r.state)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	qs, err := c.Pending(pctx)
	if err != nil {
		return err
	}
	var q *operator.Question
	for i := range qs {
		if qs[i].ID == r.id {
			q = &qs[i]
		}
	}
	if q == nil {
		return &exitError{3, fmt.Sprintf("question %s is not pending at %s (unknown, answered, or expired); run aep-mcp-bridge pending", r.id, r.endpoint)}
	}
	ack, err := c.Respond(ctx, *q, r.answer, r.window, nil)
	if errors.Is(err, operator.ErrNoAck) {
		return &exitError{4, fmt.Sprintf("no ack within %s: %v", r.window, err)}
	}
	if err != nil {
		return err
	}
	if !ack.Accepted {
		return &exitError{3, fmt.Sprintf("rejected: %s: %s", ack.Reason, ack.Detail)}
	}
	fmt.Fprintln(stdout, "accepted")
	return nil
}

// respondArgs is respond's command line.
type respondArgs struct {
	endpoint, token, state string
	id                     string
	answer                 aep.Answer
	window                 time.Duration
}

// parseRespond reads respond's command line; flags may follow the ID.
func parseRespond(args []string, stderr io.Writer) (respondArgs, error) {
	fs := subcommandFlags("respond", "respond ID (--values JSON | --decline | --cancel | --text S) [--endpoint URL] [--token T]", stderr)
	endpoint, token, state := clientFlags(fs)
	values := fs.String("values", "", `answer values as a JSON object, e.g. '{"replicas":3}'`)
	decline := fs.Bool("decline", false, "decline the question")
	cancelQ := fs.Bool("cancel", false, "cancel the question")
	text := fs.String("text", "", "answer with text (AEP-0008), e.g. \"decline\"")
	window := fs.Duration("wait", 10*time.Second, "how long to wait for the ack")
	var id string
	for rest := args; len(rest) > 0; {
		if err := fs.Parse(rest); err != nil {
			return respondArgs{}, errUsage
		}
		if fs.NArg() == 0 {
			break
		}
		if id != "" {
			fmt.Fprintln(stderr, "aep-mcp-bridge respond: one question ID only")
			return respondArgs{}, errUsage
		}
		id, rest = fs.Arg(0), fs.Args()[1:]
	}
	n := 0
	for _, set := range []bool{*values != "", *decline, *cancelQ, *text != ""} {
		if set {
			n++
		}
	}
	if id == "" || n != 1 {
		fmt.Fprintln(stderr, "aep-mcp-bridge respond: give the question ID and exactly one of --values, --decline, --cancel, --text")
		fs.Usage()
		return respondArgs{}, errUsage
	}
	r := respondArgs{endpoint: *endpoint, token: *token, state: *state, id: id, window: *window}
	switch {
	case *values != "":
		dec := json.NewDecoder(bytes.NewReader([]byte(*values)))
		dec.UseNumber()
		if err := dec.Decode(&r.answer.Values); err != nil || r.answer.Values == nil {
			fmt.Fprintln(stderr, "aep-mcp-bridge respond: --values must be a JSON object, e.g. '{\"replicas\":3}'")
			return respondArgs{}, errUsage
		}
	case *decline:
		r.answer.Option = "decline"
	case *cancelQ:
		r.answer.Option = "cancel"
	default:
		r.answer.Text = *text
	}
	return r, nil
}

// runTail is `aep-mcp-bridge tail [--filter JSON] [--json]`.
func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("tail", "tail [--filter JSON] [--json] [--endpoint URL] [--token T]", stderr)
	endpoint, token, state := clientFlags(fs)
	filter := fs.String("filter", "", `an attr-match filter, e.g. '{"type":["attention.*"]}'`)
	asJSON := fs.Bool("json", false, "print raw event lines")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return errUsage
	}
	if *filter != "" {
		if _, err := aep.ParseFilter([]byte(*filter)); err != nil {
			fmt.Fprintln(stderr, "aep-mcp-bridge tail: --filter:", err)
			return errUsage
		}
	}
	c, err := newClient(*endpoint, *token, *state)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *filter != "" {
		q.Set("filter", *filter)
	}
	return c.Stream(ctx, q, func(ev *aep.Event, raw []byte) bool {
		if *asJSON {
			fmt.Fprintf(stdout, "%s\n", raw)
		} else {
			fmt.Fprintln(stdout, describe(ev))
		}
		return true
	})
}

// describe renders one event as a readable line.
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
	return strings.TrimSpace(fmt.Sprintf("%s %s %-22s %s %s", t.Local().Format("15:04:05"), ev.Session, ev.Type, subj, oneLine(extra, 100)))
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/fieldinput"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

const respondSynopsis = "respond ID [--values JSON [--no-defaults] | --accept | --decline | --cancel | --text S] [--wait D] [--endpoint URL] [--token T]"

const respondAbout = "Answers the open question ID. With no answer flag, respond asks field by field in the terminal,\n" +
	"checks each value as it is typed, and asks a field again if the bridge refuses it.\n" +
	"--values fills the fields it leaves out with their declared defaults, as the inbox and the prompt do,\n" +
	"and says which it filled; --no-defaults sends the values as given.\n" +
	"Once the bridge takes the answer it prints accepted, declined or cancelled.\n" +
	"Exit status: 0 taken, 2 usage error, 3 rejected (or not open), 4 no ack within --wait,\n" +
	"5 endpoint unreachable (nothing sent), 1 anything else."

// runRespond is `aep-mcp-bridge respond ID [answer flag]`.
func runRespond(ctx context.Context, args []string, s stdio) error {
	stdin, stdout, stderr := s.in, s.out, s.err
	r, err := parseRespond(args, s)
	if err != nil {
		return err
	}
	var tty *terminal
	if r.interactive {
		if tty = openTerminal(stdin, stderr); tty == nil {
			fmt.Fprintln(stderr, "aep-mcp-bridge respond: no answer flag was given and stdin is not a terminal to ask on; "+
				"pass --values JSON, --accept, --decline, --cancel or --text S")
			return errUsage
		}
	}
	c, err := newClient(r.clientArgs)
	if err != nil {
		return err
	}
	q, err := findQuestion(ctx, c, r.id, r.endpoint)
	if err != nil {
		return err
	}
	switch {
	case r.interactive:
		if r.answer, err = tty.ask(ctx, q); err != nil {
			return err
		}
	case r.answer.Option == "accept" && q.Kind != "auth":
		fmt.Fprintf(stderr, "aep-mcp-bridge respond: --accept consents to a URL question; %s is a %s question: answer it with --values, or with no answer flag to be asked field by field\n",
			r.id, printable(q.Kind, false))
		return errUsage
	case r.answer.Values != nil && !r.noDefaults:
		if filled := fieldinput.FillDefaults(q.Fields, r.answer.Values); len(filled) > 0 {
			fmt.Fprintf(stderr, "aep-mcp-bridge respond: filled from the declared defaults (--no-defaults leaves them out): %s\n", describeFilled(filled))
		}
	}
	for {
		ack, err := c.Respond(ctx, *q, r.answer, r.window, nil)
		if err != nil {
			return respondError(err, r.window)
		}
		if ack.Accepted {
			fmt.Fprintln(stdout, outcomeWord(r.answer))
			return nil
		}
		// Asked field by field, a refusal for a rule the terminal could not
		// check (a pattern only the bridge reads) asks that field again and
		// sends again, the other answers kept.
		i := refusedField(ack.Detail, q.Fields)
		if !r.interactive || ack.Reason != aep.ReasonInvalid || r.answer.Values == nil || i < 0 {
			return &exitError{exitRejected, fmt.Sprintf("rejected (%s): %s", printable(ack.Reason, false), printable(ack.Detail, false))}
		}
		fmt.Fprintf(stderr, "\n  ✗ the bridge refused the answer: %s\n  Answer that field again; the others are kept.\n", printable(ack.Detail, false))
		if err := tty.askField(ctx, q.Fields, i, r.answer.Values); err != nil {
			return err
		}
	}
}

// outcomeWord says what an answer the bridge took does: a decline or a
// cancel, by option or by text (AEP-0008: trimmed, any case), or an
// accepted answer.
func outcomeWord(a aep.Answer) string {
	word := a.Option
	if word == "" && a.Values == nil {
		word = strings.ToLower(strings.TrimSpace(a.Text))
	}
	switch word {
	case "decline":
		return "declined"
	case "cancel":
		return "cancelled"
	}
	return "accepted"
}

// describeFilled lists fields and the defaults they were given, as
// "Replicas (replicas) = 2, Start with a canary (canary) = yes". Only
// declared, non-secret defaults are ever filled; the text is the
// server's, made printable.
func describeFilled(fields []aep.FieldSpec) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		name := f.ID
		if f.Label != "" && f.Label != f.ID {
			name = f.Label + " (" + f.ID + ")"
		}
		parts[i] = oneLine(name, 60) + " = " + oneLine(fieldinput.DefaultText(f), 60)
	}
	return strings.Join(parts, ", ")
}

// respondError words a failed send for the operator.
func respondError(err error, window time.Duration) error {
	var noAck *operator.NoAckError
	switch {
	case errors.Is(err, operator.ErrUnreachable):
		return err
	case errors.As(err, &noAck):
		msg := fmt.Sprintf("no ack within %s; the answer may still have been applied: run aep-mcp-bridge pending to see whether the question is open", window)
		if noAck.Last != nil {
			msg += fmt.Sprintf(" (last error: %v)", noAck.Last)
		}
		return &exitError{exitNoAck, msg}
	}
	return err
}

// findQuestion returns the open question id.
func findQuestion(ctx context.Context, c *operator.Client, id, endpoint string) (*operator.Question, error) {
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	qs, err := c.Pending(pctx)
	if err != nil {
		return nil, err
	}
	for i := range qs {
		if qs[i].ID == id {
			return &qs[i], nil
		}
	}
	return nil, &exitError{exitRejected, fmt.Sprintf("question %s is not open at %s (unknown, answered, or expired); run aep-mcp-bridge pending", printable(id, false), endpoint)}
}

// respondArgs is respond's command line.
type respondArgs struct {
	*clientArgs
	id          string
	answer      aep.Answer
	interactive bool
	noDefaults  bool
	window      time.Duration
}

// parseRespond reads respond's command line; flags may follow the ID.
func parseRespond(args []string, s stdio) (respondArgs, error) {
	stderr := s.err
	fs := newFlagSet("respond", respondSynopsis, respondAbout)
	ca := clientFlags(fs)
	values := fs.String("values", "", `answer values as a JSON object, e.g. '{"replicas":3}'`)
	accept := fs.Bool("accept", false, "consent to a URL question (after opening its page yourself)")
	decline := fs.Bool("decline", false, "decline the question")
	cancelQ := fs.Bool("cancel", false, "cancel the question")
	text := fs.String("text", "", "answer with text (AEP-0008): \"decline\" or \"cancel\" for a form, \"accept\" too for a URL question")
	noDefaults := fs.Bool("no-defaults", false, "with --values: send only the fields given, without the declared defaults of the others")
	window := fs.Duration("wait", 10*time.Second, "how long to wait for the ack")
	var id string
	for rest := args; len(rest) > 0; {
		if err := parseArgs(fs, rest, s); err != nil {
			return respondArgs{}, err
		}
		if fs.NArg() == 0 {
			break
		}
		if id != "" {
			fmt.Fprintln(stderr, "aep-mcp-bridge respond: give one question ID only")
			return respondArgs{}, errUsage
		}
		id, rest = fs.Arg(0), fs.Args()[1:]
	}
	n := 0
	for _, set := range []bool{*values != "", *accept, *decline, *cancelQ, *text != ""} {
		if set {
			n++
		}
	}
	if id == "" || n > 1 {
		fmt.Fprintln(stderr, "aep-mcp-bridge respond: give the question ID and at most one of --values, --accept, --decline, --cancel, --text")
		fs.Usage()
		return respondArgs{}, errUsage
	}
	if *noDefaults && *values == "" {
		fmt.Fprintln(stderr, "aep-mcp-bridge respond: --no-defaults goes with --values")
		return respondArgs{}, errUsage
	}
	if *window <= 0 {
		fmt.Fprintln(stderr, "aep-mcp-bridge respond: --wait must be positive")
		return respondArgs{}, errUsage
	}
	r := respondArgs{clientArgs: ca, id: id, window: *window, interactive: n == 0, noDefaults: *noDefaults}
	switch {
	case *values != "":
		dec := json.NewDecoder(bytes.NewReader([]byte(*values)))
		dec.UseNumber()
		if err := dec.Decode(&r.answer.Values); err != nil || r.answer.Values == nil {
			fmt.Fprintln(stderr, "aep-mcp-bridge respond: --values must be a JSON object, e.g. '{\"replicas\":3}'")
			return respondArgs{}, errUsage
		}
	case *accept:
		r.answer.Option = "accept"
	case *decline:
		r.answer.Option = "decline"
	case *cancelQ:
		r.answer.Option = "cancel"
	default:
		r.answer.Text = *text
	}
	return r, nil
}

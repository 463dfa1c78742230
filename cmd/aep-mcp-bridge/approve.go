package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

const approveAbout = "Approves the permission request ID: a tool call an approval policy (--policy) holds.\n" +
	"The bridge counts approvals per operator (the name your credential carries), so a rule that needs\n" +
	"two approvers waits for a second operator; it refuses an operator who is not an approver of the rule.\n" +
	"--session also lets the same call (same arguments, same rule) pass for the rest of the session,\n" +
	"when the rule offers it (remember: session).\n" +
	"Exit status: 0 taken, 2 usage error, 3 rejected (or not open), 4 no ack within --wait,\n" +
	"5 endpoint unreachable (nothing sent), 1 anything else."

const denyAbout = "Denies the permission request ID: the held tool call is not run, and the MCP client gets a tool\n" +
	"result that is an error carrying --reason, for the model to read. Any one approver's denial denies.\n" +
	"Exit status: 0 taken, 2 usage error, 3 rejected (or not open), 4 no ack within --wait,\n" +
	"5 endpoint unreachable (nothing sent), 1 anything else."

// runApprove is `aep-mcp-bridge approve ID [--session]`.
func runApprove(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("approve", "approve ID [--session] [--wait D] [--endpoint URL] [--token T]", approveAbout)
	ca := clientFlags(fs)
	session := fs.Bool("session", false, "allow-session: let the same call pass for the rest of the session (when the rule offers it)")
	window := fs.Duration("wait", 10*time.Second, "how long to wait for the ack")
	id, err := parseVerdictArgs(fs, args, s, "approve", window)
	if err != nil {
		return err
	}
	option := "allow"
	if *session {
		option = "allow-session"
	}
	return sendVerdict(ctx, s, ca, id, aep.Answer{Option: option}, *window, "approved")
}

// runDeny is `aep-mcp-bridge deny ID --reason TEXT`.
func runDeny(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("deny", "deny ID [--reason TEXT] [--wait D] [--endpoint URL] [--token T]", denyAbout)
	ca := clientFlags(fs)
	reason := fs.String("reason", "", "why, for the model to read (it is recorded as answer text, at the capture ceiling)")
	window := fs.Duration("wait", 10*time.Second, "how long to wait for the ack")
	id, err := parseVerdictArgs(fs, args, s, "deny", window)
	if err != nil {
		return err
	}
	return sendVerdict(ctx, s, ca, id, aep.Answer{Option: "deny", Text: *reason}, *window, "denied")
}

// parseVerdictArgs reads approve's or deny's command line: one ID, flags
// before or after it.
func parseVerdictArgs(fs *flag.FlagSet, args []string, s stdio, name string, window *time.Duration) (string, error) {
	var id string
	for rest := args; len(rest) > 0; {
		if err := parseArgs(fs, rest, s); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		if id != "" {
			fmt.Fprintf(s.err, "aep-mcp-bridge %s: give one permission request ID only\n", name)
			return "", errUsage
		}
		id, rest = fs.Arg(0), fs.Args()[1:]
	}
	if id == "" {
		fmt.Fprintf(s.err, "aep-mcp-bridge %s: give the permission request's ID (aep-mcp-bridge pending lists them)\n", name)
		fs.Usage()
		return "", errUsage
	}
	if *window <= 0 {
		fmt.Fprintf(s.err, "aep-mcp-bridge %s: --wait must be positive\n", name)
		return "", errUsage
	}
	return id, nil
}

// sendVerdict sends a verdict on the open permission request id and
// prints done once the bridge takes it.
func sendVerdict(ctx context.Context, s stdio, ca *clientArgs, id string, a aep.Answer, window time.Duration, done string) error {
	c, err := newClient(ca)
	if err != nil {
		return err
	}
	q, err := findQuestion(ctx, c, id, ca.endpoint)
	if err != nil {
		return err
	}
	if q.Kind != "permission" {
		return &exitError{exitRejected, fmt.Sprintf("%s is a %s question, not a permission request; answer it with aep-mcp-bridge respond", printable(id, false), printable(q.Kind, false))}
	}
	if !slices.ContainsFunc(q.Options, func(o aep.Choice) bool { return o.ID == a.Option }) {
		return &exitError{exitRejected, fmt.Sprintf("%s does not offer %s; its rule offers %s", printable(id, false), a.Option, optionIDs(q.Options))}
	}
	ack, err := c.Respond(ctx, *q, a, window, nil)
	if err != nil {
		return respondError(err, window)
	}
	if !ack.Accepted {
		return &exitError{exitRejected, fmt.Sprintf("rejected (%s): %s", printable(ack.Reason, false), printable(ack.Detail, false))}
	}
	fmt.Fprintln(s.out, done)
	return nil
}

func optionIDs(opts []aep.Choice) string {
	ids := make([]string, len(opts))
	for i, o := range opts {
		ids[i] = o.ID
	}
	return fmt.Sprint(ids)
}

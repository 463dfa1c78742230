package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/fieldinput"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// terminal asks an operator for an answer, field by field, on the
// terminal that is the process's stdin; prompts and notes go to out.
type terminal struct {
	in  *os.File
	out io.Writer
}

// openTerminal returns the terminal on stdin, or nil when stdin is not one.
func openTerminal(stdin io.Reader, out io.Writer) *terminal {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &terminal{in: f, out: out}
}

// errInputEnded is returned when the terminal's input ends mid-answer.
var errInputEnded = errors.New("the input ended before every field was answered; nothing was sent")

// lineResult is one line read from the terminal.
type lineResult struct {
	s   string
	err error
}

// readLine reads one line; secret lines are not echoed. A read blocks in
// its own goroutine, so Ctrl-C (which cancels ctx) ends the prompt at once
// with the terminal's echo restored; that goroutine ends with the next
// line or when the terminal closes.
func (t *terminal) readLine(ctx context.Context, secret bool) (string, error) {
	fd := int(t.in.Fd())
	var saved *term.State
	if secret {
		saved, _ = term.GetState(fd)
	}
	ch := make(chan lineResult, 1)
	go t.readInto(fd, secret, ch)
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		if saved != nil {
			term.Restore(fd, saved)
		}
		fmt.Fprintln(t.out)
		return "", fmt.Errorf("interrupted; nothing was sent: %w", ctx.Err())
	}
}

func (t *terminal) readInto(fd int, secret bool, ch chan<- lineResult) {
	if secret {
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(t.out)
		if err != nil {
			ch <- lineResult{err: errInputEnded}
			return
		}
		ch <- lineResult{s: string(b)}
		return
	}
	// One byte per read: nothing past the line is taken from the terminal.
	var line []byte
	var b [1]byte
	for {
		n, err := t.in.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				ch <- lineResult{s: strings.TrimSuffix(string(line), "\r")}
				return
			}
			line = append(line, b[0])
		}
		if err != nil {
			ch <- lineResult{err: errInputEnded}
			return
		}
	}
}

// ask builds the answer to q with the operator.
func (t *terminal) ask(ctx context.Context, q *operator.Question) (aep.Answer, error) {
	fmt.Fprintf(t.out, "%s asks (untrusted text):\n", printable(q.Server, false))
	for _, l := range strings.Split(printable(q.Prompt, true), "\n") {
		fmt.Fprintf(t.out, "  │ %s\n", l)
	}
	switch {
	case len(q.Fields) > 0:
		return t.askForm(ctx, q.Fields)
	case len(q.Options) > 0:
		if q.Kind == "auth" {
			t.showURL(q.Prompt)
		}
		return t.askOption(ctx, q.Options)
	}
	fmt.Fprint(t.out, "Your answer (text): ")
	s, err := t.readLine(ctx, false)
	return aep.Answer{Text: s}, err
}

// urlLine finds the URL the bridge appends to a URL question's prompt.
var urlLine = regexp.MustCompile(`(?:^|\n)URL: (\S+)\s*$`)

// showURL shows a URL question's page as text, with its domain; the
// operator opens it themselves.
func (t *terminal) showURL(prompt string) {
	m := urlLine.FindStringSubmatch(prompt)
	if m == nil {
		fmt.Fprintln(t.out, "The page's address is not shown at this capture level.")
		return
	}
	u, err := url.Parse(m[1])
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		fmt.Fprintf(t.out, "The page's address is not an http(s) URL; do not open it: %s\n", printable(m[1], false))
		return
	}
	fmt.Fprintf(t.out, "It asks you to open a page on %s:\n  %s\nOpen it yourself, then answer.\n", printable(u.Host, false), printable(m[1], false))
}

// askOption asks for one of the question's options, by number or id.
func (t *terminal) askOption(ctx context.Context, opts []aep.Choice) (aep.Answer, error) {
	for i, o := range opts {
		fmt.Fprintf(t.out, "  %d) %s [%s]\n", i+1, printable(o.Label, false), printable(o.ID, false))
	}
	for {
		fmt.Fprint(t.out, "Your choice: ")
		s, err := t.readLine(ctx, false)
		if err != nil {
			return aep.Answer{}, err
		}
		if id, ok := fieldinput.PickChoice(strings.TrimSpace(s), opts); ok {
			return aep.Answer{Option: id}, nil
		}
		fmt.Fprintf(t.out, "  ✗ choose one of 1 to %d, or an id\n", len(opts))
	}
}

// askForm asks every field in the order the server declared them and
// checks each answer as it is typed.
func (t *terminal) askForm(ctx context.Context, fields []aep.FieldSpec) (aep.Answer, error) {
	values := map[string]any{}
	for i := range fields {
		if err := t.askField(ctx, fields, i, values); err != nil {
			return aep.Answer{}, err
		}
	}
	return aep.Answer{Values: values}, nil
}

// askField asks field i of fields until its value passes the checks its
// field spec carries, and sets (or, left empty, clears) it in values.
func (t *terminal) askField(ctx context.Context, fields []aep.FieldSpec, i int, values map[string]any) error {
	f := fields[i]
	rules := fieldinput.NewRules(f)
	req := ""
	if f.Required {
		req = " (required)"
	}
	fmt.Fprintf(t.out, "\n[%d/%d] %s%s\n", i+1, len(fields), printable(f.Label, false), req)
	if f.Description != "" {
		for _, l := range strings.Split(printable(f.Description, true), "\n") {
			fmt.Fprintf(t.out, "      %s\n", l)
		}
	}
	for _, l := range fieldinput.Describe(f) {
		fmt.Fprintf(t.out, "      %s\n", printable(l, false))
	}
	for {
		fmt.Fprint(t.out, "> ")
		s, err := t.readLine(ctx, f.Secret)
		if err != nil {
			return err
		}
		v, given := fieldinput.Parse(f, s)
		if msg := rules.Check(v, given); msg != "" {
			fmt.Fprintf(t.out, "  ✗ %s\n", printable(msg, false))
			continue
		}
		delete(values, f.ID)
		if given {
			values[f.ID] = v
		}
		return nil
	}
}

// refusedField returns the index of the field a rejection's detail names
// ("field \"ID\": rule: reason", translate.InvalidAnswer's wording), or
// -1. The detail comes from the endpoint: only a field of the question
// counts.
func refusedField(detail string, fields []aep.FieldSpec) int {
	m := refusedFieldRe.FindStringSubmatch(detail)
	if m == nil {
		return -1
	}
	id, err := strconv.Unquote(m[1])
	if err != nil {
		return -1
	}
	for i, f := range fields {
		if f.ID == id {
			return i
		}
	}
	return -1
}

var refusedFieldRe = regexp.MustCompile(`^field ("(?:[^"\\]|\\.)*"): `)

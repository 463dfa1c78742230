package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Type is what happened to a question.
type Type string

// The notification types. Each target may choose which it is sent
// (Target.Events).
const (
	// Opened: a question or permission request was asked.
	Opened Type = "question.opened"
	// Answered: an operator, the MCP client or a rule answered it.
	Answered Type = "question.answered"
	// Declined: the answer was decline.
	Declined Type = "question.declined"
	// Cancelled: the answer was cancel.
	Cancelled Type = "question.cancelled"
	// TimedOut: nobody answered before it expired; the server got cancel.
	TimedOut Type = "question.timed_out"
	// Dismissed: the question was withdrawn (the server cancelled its
	// request, or the session ended).
	Dismissed Type = "question.dismissed"
	// Expiring: the question is still unanswered a configured while
	// before it expires (Options.Escalate).
	Expiring Type = "question.expiring"
)

// Types lists every notification type, in lifecycle order.
var Types = []Type{Opened, Answered, Declined, Cancelled, TimedOut, Dismissed, Expiring}

// Short returns the type without its "question." prefix, as the notify
// file and --help name it.
func (t Type) Short() string { return strings.TrimPrefix(string(t), "question.") }

// ParseType reads a type by its short name ("opened") or its full one
// ("question.opened").
func ParseType(s string) (Type, error) {
	for _, t := range Types {
		if s == t.Short() || s == string(t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown event %q: want %s", s, typeNames())
}

func typeNames() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = t.Short()
	}
	return strings.Join(names, ", ")
}

// Notification is the one value every format renders: what happened, to
// which question, as the target's capture ceiling shows it.
type Notification struct {
	// ID names this notification; it is the same for every target and on
	// every retry, so a receiver can drop a repeat.
	ID   string
	Type Type
	// Time is when it happened.
	Time     time.Time
	Question Question
	// Outcome says how a settled question ended; nil for Opened and
	// Expiring.
	Outcome *Outcome
}

// Question is a question as a notification shows it.
type Question struct {
	ID string
	// Kind is the attention request's kind: form, permission, auth, input…
	Kind string
	// Server is the MCP server that asked (the event's subject).
	Server string
	// Client is the MCP client of the session ("name version"), when
	// known.
	Client                 string
	Session, Agent, Source string
	// Prompt is the question's text at the target's ceiling: at metadata
	// it is synthesized from structure ("agent requests form: server").
	Prompt string
	// PromptTruncated says Prompt was cut to MaxPrompt characters.
	PromptTruncated bool
	Fields          []Field
	Options         []Option
	// ExpiresAt is when the question times out; zero when unknown.
	ExpiresAt time.Time
	// Capture is the level the content above is at.
	Capture aep.Capture
	// Link opens the question in the operators' inbox; "" when there is
	// no inbox address. It never carries the token.
	Link string
}

// Field is one field of a form question. A secret field shows only that
// it is one: its value never reaches the bus.
type Field struct {
	ID, Label, Type  string
	Required, Secret bool
}

// Option is one of a question's options.
type Option struct{ ID, Label string }

// Outcome is how a settled question ended.
type Outcome struct {
	// Resolution is answered, auto (a rule or the server settled it),
	// dismissed or timeout.
	Resolution string
	// By and Via name who answered and how (control: through the AEP
	// endpoint; oob: in the MCP client), when the ceiling shows them.
	By, Via string
}

// Bounds of what a notification carries.
const (
	// MaxPrompt bounds the prompt, in characters.
	MaxPrompt = 3000
	// MaxFields bounds the fields and the options listed.
	MaxFields = 50
	// maxLabel bounds a field's or an option's label, in characters.
	maxLabel = 200
	// maxName bounds a server's or a client's name, in characters.
	maxName = 200
)

// questionOf builds the question of an attention.requested delivery at
// ceiling: down-leveled as any consumer at that ceiling would see it, then
// every string through red, control characters dropped, and bounded.
func questionOf(ev aep.Event, ceiling aep.Capture, red *aep.Redactor, client string) (Question, error) {
	low, err := aep.Downlevel(ev, ceiling)
	if err != nil {
		return Question{}, err
	}
	q := Question{ID: ev.ID, Server: clean(ev.Subject, maxName), Session: ev.Session, Agent: ev.Agent,
		Source: ev.Source, Client: clean(client, maxName), Capture: low.EffectiveCapture()}
	var d aep.AttentionRequested
	if len(low.Data) > 0 {
		if err := json.Unmarshal(low.Data, &d); err != nil {
			return Question{}, fmt.Errorf("reading attention.requested %s: %w", ev.ID, err)
		}
	}
	q.Kind = clean(d.Kind, 32)
	q.Prompt, q.PromptTruncated = cut(red.Text(cleanText(d.Prompt)), MaxPrompt)
	for i, f := range d.Fields {
		if i == MaxFields {
			break
		}
		label := f.Label
		if f.Secret {
			label = f.ID // a secret field's label can describe its value
		}
		q.Fields = append(q.Fields, Field{ID: clean(f.ID, maxLabel), Label: clean(red.Text(label), maxLabel),
			Type: clean(f.Type, 16), Required: f.Required, Secret: f.Secret})
	}
	for i, o := range d.Options {
		if i == MaxFields {
			break
		}
		q.Options = append(q.Options, Option{ID: clean(o.ID, maxLabel), Label: clean(red.Text(o.Label), maxLabel)})
	}
	if d.ExpiresAt != "" {
		q.ExpiresAt, _ = time.Parse(time.RFC3339Nano, d.ExpiresAt)
	}
	return q, nil
}

// outcomeOf reads how a settling event ended its question, at ceiling.
func outcomeOf(ev aep.Event, typ Type, ceiling aep.Capture, red *aep.Redactor) *Outcome {
	switch typ {
	case TimedOut:
		return &Outcome{Resolution: "timeout"}
	case Dismissed:
		return &Outcome{Resolution: aep.ResolutionDismissed}
	}
	o := &Outcome{Resolution: aep.ResolutionAnswered}
	low, err := aep.Downlevel(ev, ceiling)
	if err != nil || len(low.Data) == 0 {
		return o
	}
	switch ev.Type {
	case "attention.answered":
		var d aep.AttentionAnswered
		if json.Unmarshal(low.Data, &d) == nil {
			o.By, o.Via = clean(red.Text(d.By), maxName), clean(d.Via, 16)
			if strings.HasPrefix(d.By, "policy:") {
				o.Resolution = aep.ResolutionAuto
			}
		}
	case "attention.resolved":
		var d aep.AttentionResolved
		if json.Unmarshal(low.Data, &d) == nil && d.Resolution != "" {
			o.Resolution = clean(d.Resolution, 16)
		}
	}
	return o
}

// clean keeps one line of printable text, at most n characters.
func clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s, _ = cut(strings.TrimSpace(s), n)
	return s
}

// cleanText keeps printable text and line breaks.
func cleanText(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			return ' '
		}
		return r
	}, s)
}

// cut shortens s to at most n characters, ending it with "…" when cut.
func cut(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + "…", true
}

// firstLine returns the first non-empty line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// noun names what the question is, for titles.
func (q *Question) noun() string {
	switch q.Kind {
	case "permission":
		return "Permission request"
	case "auth":
		return "Sign-in request"
	}
	return "Question"
}

// Title is the one-line headline every chat format shows.
func (n *Notification) Title() string {
	server := n.Question.Server
	if server == "" {
		server = "an MCP server"
	}
	head := n.Question.noun() + " from " + server
	switch n.Type {
	case Answered:
		if n.Outcome != nil && n.Outcome.By != "" {
			return head + " answered by " + n.Outcome.By
		}
		return head + " answered"
	case Declined:
		return head + " declined"
	case Cancelled:
		return head + " cancelled"
	case TimedOut:
		return head + " timed out unanswered"
	case Dismissed:
		return head + " withdrawn"
	case Expiring:
		if left := n.Question.ExpiresAt.Sub(n.Time); left > 0 {
			return head + " expires in " + roundLeft(left) + ", still unanswered"
		}
		return head + " is about to expire unanswered"
	}
	return head
}

// roundLeft writes a time left to the second.
func roundLeft(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Second {
		d = time.Second
	}
	return d.String()
}

// Facts are the short labelled lines chat formats list under the prompt.
func (n *Notification) Facts() [][2]string {
	q := &n.Question
	var out [][2]string
	if q.Server != "" {
		out = append(out, [2]string{"Server", q.Server})
	}
	if q.Client != "" {
		out = append(out, [2]string{"Client", q.Client})
	}
	if len(q.Fields) > 0 {
		names := make([]string, len(q.Fields))
		for i, f := range q.Fields {
			names[i] = f.Label
			if names[i] == "" {
				names[i] = f.ID
			}
		}
		out = append(out, [2]string{"Fields", strings.Join(names, ", ")})
	}
	if !q.ExpiresAt.IsZero() && (n.Type == Opened || n.Type == Expiring) {
		out = append(out, [2]string{"Expires", q.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC")})
	}
	return out
}

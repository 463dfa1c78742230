package notify

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// ntfy takes a message published as JSON, posted to the server's root URL
// with the topic inside (docs.ntfy.sh/publish, "Publish as JSON"): the
// target's URL is the topic's (https://ntfy.sh/TOPIC), and the bridge
// posts to its root (ntfyEndpoint). JSON rather than the header form
// because headers cannot carry every prompt's characters and line
// breaks. The message is plain text (no "markdown": true), the click
// action and a "view" action button open the inbox. Limits used here: the
// message 3,500 bytes, under ntfy's default 4,096 (past which ntfy turns
// a message into an attachment).

type ntfyAction struct {
	Action string `json:"action"`
	Label  string `json:"label"`
	URL    string `json:"url"`
}

type ntfyMessage struct {
	Topic    string       `json:"topic"`
	Title    string       `json:"title"`
	Message  string       `json:"message"`
	Priority int          `json:"priority"`
	Tags     []string     `json:"tags,omitempty"`
	Click    string       `json:"click,omitempty"`
	Actions  []ntfyAction `json:"actions,omitempty"`
}

// ntfyLook is each type's priority (1 min … 5 max) and tag (an emoji
// short code ntfy shows).
var ntfyLook = map[Type]struct {
	priority int
	tag      string
}{Opened: {4, "question"}, Expiring: {5, "warning"}, Answered: {3, "white_check_mark"},
	Declined: {3, "no_entry_sign"}, Cancelled: {3, "no_entry_sign"}, TimedOut: {4, "hourglass"}, Dismissed: {2, "wastebasket"}}

// cutBytes shortens s to at most n bytes at a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func renderNtfy(n *Notification, topic string) ([]byte, error) {
	look := ntfyLook[n.Type]
	var lines []string
	if p := n.Question.Prompt; p != "" && n.Type != Dismissed {
		lines = append(lines, p)
	}
	for _, f := range n.Facts() {
		lines = append(lines, f[0]+": "+f[1])
	}
	if len(lines) == 0 {
		lines = append(lines, n.Title())
	}
	m := ntfyMessage{Topic: topic, Title: cutBytes(n.Title(), 250), Message: cutBytes(strings.Join(lines, "\n"), 3500),
		Priority: look.priority, Tags: []string{look.tag}}
	if link := n.Question.Link; link != "" {
		m.Click = link
		m.Actions = []ntfyAction{{Action: "view", Label: "Open in the inbox", URL: link}}
	}
	return json.Marshal(m)
}

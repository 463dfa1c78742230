package notify

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Slack incoming webhooks take a JSON message: "text", the plain fallback
// that notifications show, and "blocks" (Block Kit) for the message
// itself (api.slack.com/messaging/webhooks; Block Kit at
// api.slack.com/reference/block-kit/blocks). Limits used here: a header's
// plain_text 150 characters, a section's text 3000, a context block 10
// elements.
//
// Server text is hostile: it goes into plain_text objects, which Slack
// shows without mrkdwn formatting, and &, < and > are written as &amp;,
// &lt; and &gt; everywhere, as Slack's message formatting rules require
// (api.slack.com/reference/surfaces/formatting#escaping), so no text can
// become a link, a mention or a <!channel> broadcast. The only link is
// the bridge's own, to the inbox.

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

// slackEscape writes the three characters Slack treats as control
// characters as their entities.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackCut escapes s and shortens it so that the escaped text has at most
// max characters, never cutting an entity in two.
func slackCut(s string, max int) string {
	for limit := max; ; {
		c, _ := cut(s, limit)
		e := slackEscape.Replace(c)
		over := utf8.RuneCountInString(e) - max
		if over <= 0 || limit <= 1 {
			return e
		}
		limit -= over
	}
}

func renderSlack(n *Notification) ([]byte, error) {
	title, _ := cut(n.Title(), 150)
	plain := func(s string, max int) *slackText { return &slackText{Type: "plain_text", Text: slackCut(s, max)} }
	m := slackMessage{Text: slackCut(title, 150), Blocks: []slackBlock{{Type: "header", Text: plain(title, 150)}}}
	if p := n.Question.Prompt; p != "" && n.Type != Dismissed {
		m.Blocks = append(m.Blocks, slackBlock{Type: "section", Text: plain(p, 2900)})
		m.Text += ": " + slackEscape.Replace(firstLine(p))
	}
	if facts := n.Facts(); len(facts) > 0 {
		ctx := slackBlock{Type: "context"}
		for _, f := range facts {
			ctx.Elements = append(ctx.Elements, *plain(f[0]+": "+f[1], 2000))
		}
		m.Blocks = append(m.Blocks, ctx)
	}
	if link := n.Question.Link; link != "" {
		// The link is the bridge's own (--public-url, checked to hold no
		// <, > or |) and a ULID.
		m.Blocks = append(m.Blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: "<" + link + "|Open in the inbox>"}})
	}
	return json.Marshal(m)
}

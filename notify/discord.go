package notify

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Discord webhooks take the JSON of "Execute Webhook"
// (discord.com/developers/docs/resources/webhook#execute-webhook): here
// one embed (discord.com/developers/docs/resources/message#embed-object)
// with a title linking to the inbox, the prompt as its description and
// the facts as fields, and allowed_mentions with an empty parse list
// (…/message#allowed-mentions-object), so no text a server wrote can ping
// @everyone, a role or a user. Limits used here: a title 256 characters,
// a description 4096, a field's name 256 and value 1024, 25 fields, 6000
// characters in all.
//
// Server text is hostile: Markdown characters in it are escaped with a
// backslash, so it cannot become a masked link, a mention or a
// timestamp; the only link is the bridge's own.

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline,omitempty"`
}

type discordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	URL         string         `json:"url,omitempty"`
	Color       int            `json:"color"`
	Timestamp   string         `json:"timestamp"`
	Fields      []discordField `json:"fields,omitempty"`
	Footer      *struct {
		Text string `json:"text"`
	} `json:"footer,omitempty"`
}

type discordMessage struct {
	Embeds          []discordEmbed `json:"embeds"`
	AllowedMentions struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
}

// discordMarkdown is every character Discord's Markdown gives a meaning.
const discordMarkdown = "\\*_~`|>#-[]()<@:!."

// discordEscape backslash-escapes Markdown in s and shortens it so that
// the escaped text has at most max characters.
func discordEscape(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		w := 1
		if strings.ContainsRune(discordMarkdown, r) {
			w = 2
		}
		if n+w > max-1 {
			b.WriteString("…")
			return b.String()
		}
		if w == 2 {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
		n += w
	}
	return b.String()
}

// discordColor is the embed's colour for each type.
var discordColor = map[Type]int{Opened: 0x3B82F6, Expiring: 0xF59E0B, Answered: 0x22C55E,
	Declined: 0x6B7280, Cancelled: 0x6B7280, TimedOut: 0xEF4444, Dismissed: 0x6B7280}

func renderDiscord(n *Notification) ([]byte, error) {
	e := discordEmbed{Title: discordEscape(n.Title(), 256), URL: n.Question.Link, Color: discordColor[n.Type],
		Timestamp: rfc3339ms(n.Time)}
	if p := n.Question.Prompt; p != "" && n.Type != Dismissed {
		e.Description = discordEscape(p, 3000)
	}
	for _, f := range n.Facts() {
		e.Fields = append(e.Fields, discordField{Name: f[0], Value: discordEscape(f[1], 400), Inline: f[0] != "Fields"})
	}
	if !n.Question.ExpiresAt.IsZero() && (n.Type == Opened || n.Type == Expiring) {
		// Discord shows <t:unix:R> as a live "in 9 minutes".
		e.Fields = append(e.Fields, discordField{Name: "Time left", Value: "<t:" + strconv.FormatInt(n.Question.ExpiresAt.Unix(), 10) + ":R>", Inline: true})
	}
	e.Footer = &struct {
		Text string `json:"text"`
	}{Text: "question " + n.Question.ID}
	m := discordMessage{Embeds: []discordEmbed{e}}
	m.AllowedMentions.Parse = []string{}
	return json.Marshal(m)
}

package notify

import "encoding/json"

// Microsoft Teams workflows ("Post to a channel when a webhook request is
// received", built on the "When a Teams webhook request is received"
// trigger) take only Adaptive Cards, not the old connector message cards
// (learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using):
// a message whose attachments hold one card of content type
// application/vnd.microsoft.card.adaptive, card version 1.4.
//
// Server text is hostile: it goes into TextRuns of RichTextBlocks, which
// Adaptive Cards never read as Markdown
// (learn.microsoft.com/adaptive-cards/authoring-cards/text-features), so
// it cannot become a link. The only link is the bridge's own, an
// Action.OpenUrl to the inbox.

type teamsRun struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Weight string `json:"weight,omitempty"`
	Size   string `json:"size,omitempty"`
}

type teamsElement struct {
	Type    string     `json:"type"`
	Inlines []teamsRun `json:"inlines"`
}

type teamsAction struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

type teamsCard struct {
	Schema  string         `json:"$schema"`
	Type    string         `json:"type"`
	Version string         `json:"version"`
	Body    []teamsElement `json:"body"`
	Actions []teamsAction  `json:"actions,omitempty"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

func renderTeams(n *Notification) ([]byte, error) {
	run := func(s string) teamsRun { return teamsRun{Type: "TextRun", Text: s} }
	card := teamsCard{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4",
		Body: []teamsElement{{Type: "RichTextBlock", Inlines: []teamsRun{{Type: "TextRun", Text: n.Title(), Weight: "Bolder", Size: "Medium"}}}}}
	if p := n.Question.Prompt; p != "" && n.Type != Dismissed {
		card.Body = append(card.Body, teamsElement{Type: "RichTextBlock", Inlines: []teamsRun{run(p)}})
	}
	for _, f := range n.Facts() {
		card.Body = append(card.Body, teamsElement{Type: "RichTextBlock",
			Inlines: []teamsRun{{Type: "TextRun", Text: f[0] + ": ", Weight: "Bolder"}, run(f[1])}})
	}
	if link := n.Question.Link; link != "" {
		card.Actions = []teamsAction{{Type: "Action.OpenUrl", Title: "Open in the inbox", URL: link}}
	}
	return json.Marshal(teamsMessage{Type: "message", Attachments: []teamsAttachment{{
		ContentType: "application/vnd.microsoft.card.adaptive", Content: card}}})
}

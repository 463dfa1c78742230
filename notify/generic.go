package notify

import (
	"encoding/json"
	"time"
)

// GenericVersion is the version of the generic body's shape; it grows
// only with members a receiver may ignore.
const GenericVersion = 1

// genericBody is the json format:
//
//	{"version":1, "id":"<delivery id>", "type":"question.opened", "time":"…",
//	 "question":{"id", "kind", "server", "client", "session", "agent", "source",
//	             "prompt", "prompt_truncated", "fields":[{"id","label","type","required","secret"}],
//	             "options":[{"id","label"}], "expires_at", "capture", "link"},
//	 "outcome":{"resolution", "by", "via"}}
//
// Empty members are left out; outcome is present on settled types only.
type genericBody struct {
	Version  int             `json:"version"`
	ID       string          `json:"id"`
	Type     Type            `json:"type"`
	Time     string          `json:"time"`
	Question genericQuestion `json:"question"`
	Outcome  *genericOutcome `json:"outcome,omitempty"`
}

type genericQuestion struct {
	ID              string          `json:"id"`
	Kind            string          `json:"kind,omitempty"`
	Server          string          `json:"server,omitempty"`
	Client          string          `json:"client,omitempty"`
	Session         string          `json:"session,omitempty"`
	Agent           string          `json:"agent,omitempty"`
	Source          string          `json:"source,omitempty"`
	Prompt          string          `json:"prompt,omitempty"`
	PromptTruncated bool            `json:"prompt_truncated,omitempty"`
	Fields          []genericField  `json:"fields,omitempty"`
	Options         []genericOption `json:"options,omitempty"`
	ExpiresAt       string          `json:"expires_at,omitempty"`
	Capture         string          `json:"capture"`
	Link            string          `json:"link,omitempty"`
}

type genericField struct {
	ID       string `json:"id"`
	Label    string `json:"label,omitempty"`
	Type     string `json:"type,omitempty"`
	Required bool   `json:"required"`
	Secret   bool   `json:"secret,omitempty"`
}

type genericOption struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
}

type genericOutcome struct {
	Resolution string `json:"resolution"`
	By         string `json:"by,omitempty"`
	Via        string `json:"via,omitempty"`
}

// rfc3339ms writes a time as the AEP envelope does: UTC, milliseconds.
func rfc3339ms(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func renderJSON(n *Notification) ([]byte, error) {
	q := &n.Question
	b := genericBody{Version: GenericVersion, ID: n.ID, Type: n.Type, Time: rfc3339ms(n.Time),
		Question: genericQuestion{ID: q.ID, Kind: q.Kind, Server: q.Server, Client: q.Client, Session: q.Session,
			Agent: q.Agent, Source: q.Source, Prompt: q.Prompt, PromptTruncated: q.PromptTruncated,
			Capture: q.Capture.String(), Link: q.Link}}
	if !q.ExpiresAt.IsZero() {
		b.Question.ExpiresAt = rfc3339ms(q.ExpiresAt)
	}
	for _, f := range q.Fields {
		b.Question.Fields = append(b.Question.Fields, genericField(f))
	}
	for _, o := range q.Options {
		b.Question.Options = append(b.Question.Options, genericOption(o))
	}
	if n.Outcome != nil {
		b.Outcome = &genericOutcome{Resolution: n.Outcome.Resolution, By: n.Outcome.By, Via: n.Outcome.Via}
	}
	return json.Marshal(b)
}

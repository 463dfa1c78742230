package notify

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Format is the body a target is sent.
type Format string

// The formats.
const (
	// JSON is the generic body (see generic.go), signed with the target's
	// secret.
	JSON Format = "json"
	// Slack is a Slack incoming webhook message (Block Kit).
	Slack Format = "slack"
	// Discord is a Discord webhook message with one embed.
	Discord Format = "discord"
	// Teams is a message with an Adaptive Card, as a Microsoft Teams
	// workflow's "when a Teams webhook request is received" trigger takes.
	Teams Format = "teams"
	// Ntfy is an ntfy message published as JSON.
	Ntfy Format = "ntfy"
)

// Formats lists every format.
var Formats = []Format{JSON, Slack, Discord, Teams, Ntfy}

// ParseFormat reads a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if s == string(f) {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format: want %s", formatNames())
}

func formatNames() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// DetectFormat picks the format of a URL with none given: a URL of the
// services' own webhook hosts gets their format, anything else json.
func DetectFormat(raw string) Format {
	u, err := url.Parse(raw)
	if err != nil {
		return JSON
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case host == "hooks.slack.com":
		return Slack
	case (host == "discord.com" || host == "discordapp.com" || strings.HasSuffix(host, ".discord.com")) &&
		strings.HasPrefix(u.Path, "/api/webhooks/"):
		return Discord
	case strings.HasSuffix(host, ".logic.azure.com") || strings.HasSuffix(host, ".powerplatform.com"):
		return Teams
	case host == "ntfy.sh":
		return Ntfy
	}
	return JSON
}

// ntfyTopicRe is what ntfy accepts as a topic name.
var ntfyTopicRe = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// ntfyEndpoint splits an ntfy topic URL (https://ntfy.example/TOPIC, or
// under a path prefix) into the server's root URL, where a message
// published as JSON is posted (docs.ntfy.sh/publish, "Publish as JSON"),
// and the topic. The query (an ?auth= parameter, say) stays on the root.
func ntfyEndpoint(raw string) (root, topic string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("the URL does not parse")
	}
	p := strings.TrimSuffix(u.Path, "/")
	i := strings.LastIndex(p, "/")
	if i < 0 || !ntfyTopicRe.MatchString(p[i+1:]) {
		return "", "", fmt.Errorf("an ntfy URL names its topic as the last part of its path, e.g. https://ntfy.sh/TOPIC, with 1-64 letters, digits, - and _")
	}
	topic = p[i+1:]
	u.Path, u.RawPath = p[:i+1], ""
	return u.String(), topic, nil
}

// render encodes n as format f. ntfyTopic is the topic of an ntfy target.
func render(f Format, n *Notification, ntfyTopic string) ([]byte, error) {
	switch f {
	case JSON:
		return renderJSON(n)
	case Slack:
		return renderSlack(n)
	case Discord:
		return renderDiscord(n)
	case Teams:
		return renderTeams(n)
	case Ntfy:
		return renderNtfy(n, ntfyTopic)
	}
	return nil, fmt.Errorf("unknown format %q", f)
}

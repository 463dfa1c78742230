package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

const deploySchema = `{"type":"object","properties":{
 "env":{"type":"string","title":"Environment","enum":["staging","production"]},
 "replicas":{"type":"integer","title":"Replicas"}},"required":["env"]}`

// checkSignature verifies a json body's signature the way a receiver
// would, with its own HMAC, not the package's.
func checkSignature(t *testing.T, g received, secret string) {
	t.Helper()
	h := g.Header.Get(SignatureHeader)
	var ts, v1 string
	for _, p := range strings.Split(h, ",") {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || v1 == "" {
		t.Fatalf("%s = %q; want t=<unix>,v1=<hex>", SignatureHeader, h)
	}
	if age := time.Since(time.Unix(sec, 0)); age > 5*time.Minute || age < -5*time.Minute {
		t.Errorf("the signature's timestamp is %s old", age)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(g.Body)
	if want := hex.EncodeToString(m.Sum(nil)); v1 != want {
		t.Errorf("v1 = %s; want %s (HMAC-SHA256 of t.body)", v1, want)
	}
}

// TestEveryFormat sends a question's opening and its answer to a real
// receiver of each format, and checks each body as the service reads it,
// the link into the inbox, and the generic body's signature.
func TestEveryFormat(t *testing.T) {
	t.Parallel()
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	rc := map[Format]*receiver{}
	var targets []Target
	for _, f := range Formats {
		rc[f] = newReceiver(t, nil)
		tg := Target{Name: string(f), URL: rc[f].srv.URL + "/hook", Format: f, Capture: aep.CaptureRedacted}
		switch f {
		case JSON:
			tg.Secret = testSecret
		case Ntfy:
			tg.URL = rc[f].srv.URL + "/base/mytopic?auth=abc"
		}
		targets = append(targets, tg)
	}
	w.start(t, Options{Targets: targets, PublicURL: "https://inbox.example/"})
	id := w.ask(t, "deploy-server", "Deploy checkout to production?", deploySchema)
	link := "https://inbox.example/#question=" + id

	opened := map[Format]map[string]any{}
	for _, f := range Formats {
		g := rc[f].waitType(t, Opened)
		if g.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: Content-Type %q", f, g.Header.Get("Content-Type"))
		}
		opened[f] = decode(t, g.Body)
		if f == JSON {
			checkSignature(t, g, testSecret)
			if got := g.Header.Get(DeliveryHeader); got != path(opened[f], "id") {
				t.Errorf("%s %q; want the body's id %v", DeliveryHeader, got, path(opened[f], "id"))
			}
		}
		if f == Ntfy && g.Path != "/base/" {
			t.Errorf("ntfy: posted to %s; want the server's root /base/", g.Path)
		}
	}
	w.answer(t, id, aep.Answer{Values: map[string]any{"env": "production"}})

	t.Run("json", func(t *testing.T) {
		b := opened[JSON]
		got := map[string]any{"type": b["type"], "version": b["version"], "id": path(b, "question", "id"),
			"kind": path(b, "question", "kind"), "server": path(b, "question", "server"), "client": path(b, "question", "client"),
			"prompt": path(b, "question", "prompt"), "link": path(b, "question", "link"), "capture": path(b, "question", "capture"),
			"field": path(b, "question", "fields", 0, "id")}
		want := map[string]any{"type": "question.opened", "version": jsonNumber(1), "id": id, "kind": "form", "server": "deploy-server",
			"client": "claude-code 2.1", "prompt": "Deploy checkout to production?", "link": link, "capture": "redacted", "field": "env"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("generic body (-want +got):\n%s", d)
		}
		g := rc[JSON].waitType(t, Answered)
		checkSignature(t, g, testSecret)
		b = decode(t, g.Body)
		if path(b, "outcome", "resolution") != "answered" || path(b, "outcome", "via") != "control" || path(b, "question", "id") != id {
			t.Errorf("answered body: %s", g.Body)
		}
	})
	t.Run("slack", func(t *testing.T) {
		b := opened[Slack]
		if got := path(b, "blocks", 0, "text", "text"); got != "Question from deploy-server" {
			t.Errorf("header %v", got)
		}
		if got := path(b, "blocks", 1, "text"); !cmp.Equal(got, map[string]any{"type": "plain_text", "text": "Deploy checkout to production?"}) {
			t.Errorf("prompt section %v", got)
		}
		last := path(b, "blocks", len(b["blocks"].([]any))-1, "text", "text")
		if last != "<"+link+"|Open in the inbox>" {
			t.Errorf("link section %v; want the inbox link", last)
		}
		if !strings.HasPrefix(b["text"].(string), "Question from deploy-server") {
			t.Errorf("fallback text %q", b["text"])
		}
		rc[Slack].waitType(t, Answered)
	})
	t.Run("discord", func(t *testing.T) {
		b := opened[Discord]
		if got := path(b, "embeds", 0, "url"); got != link {
			t.Errorf("embed url %v; want %s", got, link)
		}
		if got := path(b, "embeds", 0, "description"); got != "Deploy checkout to production?" {
			t.Errorf("description %v", got)
		}
		if got := path(b, "allowed_mentions", "parse"); !cmp.Equal(got, []any{}) {
			t.Errorf("allowed_mentions.parse = %v; want [] (no pings)", got)
		}
		if got := path(b, "embeds", 0, "title"); got != "Question from deploy\\-server" {
			t.Errorf("title %v", got)
		}
		rc[Discord].waitType(t, Answered)
	})
	t.Run("teams", func(t *testing.T) {
		b := opened[Teams]
		if b["type"] != "message" || path(b, "attachments", 0, "contentType") != "application/vnd.microsoft.card.adaptive" {
			t.Errorf("not a message with an Adaptive Card: %v", b)
		}
		card := path(b, "attachments", 0, "content")
		if path(card, "type") != "AdaptiveCard" || path(card, "version") != "1.4" {
			t.Errorf("card %v", card)
		}
		if got := path(card, "body", 1, "inlines", 0, "text"); got != "Deploy checkout to production?" {
			t.Errorf("prompt %v", got)
		}
		if got := path(card, "actions", 0); !cmp.Equal(got, map[string]any{"type": "Action.OpenUrl", "title": "Open in the inbox", "url": link}) {
			t.Errorf("action %v", got)
		}
		rc[Teams].waitType(t, Answered)
	})
	t.Run("ntfy", func(t *testing.T) {
		b := opened[Ntfy]
		got := map[string]any{"topic": b["topic"], "title": b["title"], "click": b["click"], "priority": b["priority"],
			"action": path(b, "actions", 0, "url")}
		want := map[string]any{"topic": "mytopic", "title": "Question from deploy-server", "click": link, "priority": jsonNumber(4), "action": link}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ntfy body (-want +got):\n%s", d)
		}
		if !strings.HasPrefix(b["message"].(string), "Deploy checkout to production?\nServer: deploy-server") {
			t.Errorf("message %q", b["message"])
		}
		rc[Ntfy].waitType(t, Answered)
	})
}

// TestHostileTextStaysText: a server's prompt written to ping everyone,
// inject a link or a mention stays text in every chat format.
func TestHostileTextStaysText(t *testing.T) {
	t.Parallel()
	n := &Notification{ID: "x", Type: Opened, Time: time.Now(), Question: Question{ID: "q", Server: "evil<!here>",
		Prompt: "<!channel> @everyone [click](https://evil.example) <@123> **bold** & more", Link: "https://inbox.example/#question=q"}}
	bodies := map[Format]string{}
	for _, f := range Formats {
		b, err := render(f, n, "topic")
		if err != nil {
			t.Fatal(err)
		}
		bodies[f] = string(b)
	}
	slack := decode(t, []byte(bodies[Slack]))
	if got := path(slack, "blocks", 1, "text", "text"); got != "&lt;!channel&gt; @everyone [click](https://evil.example) &lt;@123&gt; **bold** &amp; more" {
		t.Errorf("slack prompt %q; want <, > and & as entities", got)
	}
	if got := slack["text"].(string); strings.Contains(got, "<!") {
		t.Errorf("slack fallback text %q keeps a control sequence", got)
	}
	discord := decode(t, []byte(bodies[Discord]))
	if got := path(discord, "embeds", 0, "description"); got != `\<\!channel\> \@everyone \[click\]\(https\://evil\.example\) \<\@123\> \*\*bold\*\* & more` {
		t.Errorf("discord description %q; want Markdown escaped", got)
	}
	teams := decode(t, []byte(bodies[Teams]))
	if got := path(teams, "attachments", 0, "content", "body", 1, "type"); got != "RichTextBlock" {
		t.Errorf("teams puts the prompt in %v; want a RichTextBlock (no Markdown)", got)
	}
}

// jsonNumber is a number as decode reads it.
func jsonNumber(i int) any { return json.Number(strconv.Itoa(i)) }

package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/weburl"
	"github.com/agenteventprotocol/aep-mcp-bridge/notify"
)

// notifySecretEnv holds the secret that signs the json bodies of --notify
// URLs; without it one is generated once and stored in the state folder.
const notifySecretEnv = "AEP_NOTIFY_SECRET"

// notifyFlags are the webhook notification flags of run, serve and demo.
// Their values may be secrets (a Slack URL carries its token): Set never
// fails, so the flag package never echoes one, and errors name a URL by
// its scheme and host only.
type notifyFlags struct {
	urls, escalateTo listFlag
	file             string
	escalate         time.Duration
	capture          string
	publicURL        string
}

// define adds the notification flags to fs.
func (nf *notifyFlags) define(fs *flag.FlagSet) {
	fs.Var(&nf.urls, "notify", "POST a notification to the webhook `URL` when a question opens, is answered, declined, cancelled, times out or is withdrawn; "+
		"[FORMAT=]URL, FORMAT json (signed; the default), slack, discord, teams or ntfy (the services' own webhook hosts are recognised); "+
		"https, or http to loopback only; repeatable (a URL with a token is better kept in --notify-file with url_env)")
	fs.StringVar(&nf.file, "notify-file", "", "a YAML or JSON `FILE` of webhook targets with per-target format, secret, capture ceiling, events and escalation (see the docs)")
	fs.DurationVar(&nf.escalate, "notify-escalate", 0, "notify again this long before a question expires if it is still unanswered (e.g. 2m); 0 disables")
	fs.Var(&nf.escalateTo, "notify-escalate-to", "a webhook `URL` ([FORMAT=]URL) that gets only the about-to-expire notifications; repeatable")
	fs.StringVar(&nf.capture, "notify-capture", "metadata", "capture ceiling of what --notify URLs are sent: none, metadata, redacted or full (secret fields and credentials never leave)")
	fs.StringVar(&nf.publicURL, "public-url", "", "the `URL` where operators reach the inbox (e.g. https://bridge.example.com), for links to a question in notifications; default: the endpoint's address")
}

// any reports whether any notification was asked for.
func (nf *notifyFlags) any() bool {
	return len(nf.urls) > 0 || len(nf.escalateTo) > 0 || nf.file != ""
}

// options maps the flags to the notifier's options, or nil when no
// notification is asked for. stateFlag is --state-dir, where a generated
// signing secret is stored.
func (nf *notifyFlags) options(stateFlag string, redact aep.RedactOptions, logger *slog.Logger) (*notify.Options, error) {
	if !nf.any() {
		if nf.escalate != 0 || nf.publicURL != "" {
			return nil, fmt.Errorf("--notify-escalate and --public-url go with --notify, --notify-escalate-to or --notify-file")
		}
		return nil, nil
	}
	capture, err := aep.ParseCapture(nf.capture)
	if err != nil {
		return nil, fmt.Errorf("--notify-capture: %w", err)
	}
	if nf.escalate < 0 {
		return nil, fmt.Errorf("--notify-escalate must be 0 (off) or positive")
	}
	o := &notify.Options{Escalate: nf.escalate, Redact: redact, Logger: logger}
	if nf.publicURL != "" {
		if o.PublicURL, err = notify.CheckPublicURL(nf.publicURL); err != nil {
			return nil, err
		}
	}
	var secret string
	add := func(flagName, v string, events []notify.Type) error {
		t, err := parseNotifyURL(flagName, v)
		if err != nil {
			return err
		}
		t.Capture, t.Events = capture, events
		if t.Format == notify.JSON {
			if secret == "" {
				if secret, err = notifySecret(stateFlag, logger); err != nil {
					return err
				}
			}
			t.Secret = secret
		}
		o.Targets = append(o.Targets, t)
		return nil
	}
	for _, v := range nf.urls {
		if err := add("--notify", v, nil); err != nil {
			return nil, err
		}
	}
	for _, v := range nf.escalateTo {
		if err := add("--notify-escalate-to", v, []notify.Type{notify.Expiring}); err != nil {
			return nil, err
		}
	}
	if len(nf.escalateTo) > 0 && nf.escalate == 0 {
		return nil, fmt.Errorf("--notify-escalate-to needs --notify-escalate D, how long before expiry to notify")
	}
	if nf.file != "" {
		cfg, err := notify.LoadFile(nf.file)
		if err != nil {
			return nil, err
		}
		hideSecretEnv(cfg.SecretEnv, logger)
		o.Targets = append(o.Targets, cfg.Targets...)
		if o.Escalate == 0 {
			o.Escalate = cfg.Escalate
		}
	}
	labels := make([]string, len(o.Targets))
	for i := range o.Targets {
		labels[i] = o.Targets[i].Label()
	}
	logger.Info("webhook notifications", "targets", strings.Join(labels, ", "), "escalate", o.Escalate)
	return o, nil
}

// parseNotifyURL reads [FORMAT=]URL. The error names the URL by its
// scheme and host only, and never quotes what stands before an "=" that
// is not a format: it may be a URL without its scheme, and its secret.
func parseNotifyURL(flagName, v string) (notify.Target, error) {
	var t notify.Target
	if name, rest, ok := strings.Cut(v, "="); ok && !strings.Contains(name, ":") {
		f, err := notify.ParseFormat(name)
		if err != nil {
			return t, fmt.Errorf("%s: what stands before the first '=' (not shown: it may be a secret) is an %w; give [FORMAT=]URL, the URL with its https:// scheme", flagName, err)
		}
		t.Format, v = f, rest
	}
	t.URL = v
	if err := weburl.Check(v); err != nil {
		return t, fmt.Errorf("%s: %w", flagName, err)
	}
	if t.Format == "" {
		t.Format = notify.DetectFormat(v)
	}
	return t, nil
}

// notifySecret returns the secret that signs json bodies: AEP_NOTIFY_SECRET,
// or one generated once and stored with mode 0600 in the state folder.
func notifySecret(stateFlag string, logger *slog.Logger) (string, error) {
	if v := os.Getenv(notifySecretEnv); v != "" {
		if len(v) < notify.MinSecretLen {
			return "", fmt.Errorf("%s has %d characters; a signing secret needs at least %d (openssl rand -hex 32 makes one), or unset it to use a generated one",
				notifySecretEnv, len(v), notify.MinSecretLen)
		}
		return v, nil
	}
	dir, err := stateDir(stateFlag)
	if err != nil {
		return "", err
	}
	secret, where, err := loadNamedToken(tokenSource{flagName: notifySecretEnv, env: notifySecretEnv, file: "notify-secret"}, dir, false)
	if err != nil {
		return "", err
	}
	logger.Info("json webhook bodies are signed with the secret stored here (X-AEP-Signature)", "path", where)
	return secret, nil
}

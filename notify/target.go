package notify

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/weburl"
)

// Target is one webhook to notify. Its URL and Secret are secrets of
// their own (Slack, Discord and Teams URLs carry their token): they are
// never logged, and errors name the target by Name or by its URL's
// scheme and host.
type Target struct {
	// Name names the target in logs, stats and EscalateTo; "" means its
	// URL's scheme and host.
	Name string
	// URL is https, or http to a loopback host (weburl.Check).
	URL string
	// Format is the body; "" means DetectFormat(URL).
	Format Format
	// Secret signs every body (SignatureHeader); a json target needs one
	// of at least MinSecretLen bytes, the others may have one.
	Secret string
	// Capture is the ceiling of what the target is sent; 0 means
	// metadata, where prompts are synthesized from structure.
	Capture aep.Capture
	// Events are the types the target is sent; nil means all.
	Events []Type
	// EscalateTo names other targets that are also sent this target's
	// questions' Expiring notifications, whatever their Events.
	EscalateTo []string
}

// Label is how logs and stats name the target: Name, or the URL's scheme
// and host.
func (t *Target) Label() string {
	if t.Name != "" {
		return t.Name
	}
	return weburl.Display(t.URL)
}

// Wants reports whether the target is sent notifications of type typ.
func (t *Target) Wants(typ Type) bool { return t.Events == nil || slices.Contains(t.Events, typ) }

// check validates t and fills its defaults. Errors name the target by
// Label and never quote the URL or the secret.
func (t *Target) check() error {
	if err := weburl.Check(t.URL); err != nil {
		return fmt.Errorf("notify target %s: %w", t.Label(), err)
	}
	u, _ := url.Parse(t.URL)
	if u.User != nil {
		return fmt.Errorf("notify target %s: the URL has user info (user:password@); put a credential the service takes in its path or query, never in user info", t.Label())
	}
	if u.Fragment != "" {
		return fmt.Errorf("notify target %s: the URL has a #fragment, which is never sent; remove it", t.Label())
	}
	if t.Format == "" {
		t.Format = DetectFormat(t.URL)
	}
	if _, err := ParseFormat(string(t.Format)); err != nil {
		return fmt.Errorf("notify target %s: %w", t.Label(), err)
	}
	if t.Format == Ntfy {
		if _, _, err := ntfyEndpoint(t.URL); err != nil {
			return fmt.Errorf("notify target %s: %w", t.Label(), err)
		}
	}
	switch {
	case t.Secret == "" && t.Format == JSON:
		return fmt.Errorf("notify target %s: the json format is signed, and this target has no secret; give one of at least %d bytes (openssl rand -hex 32 makes one)", t.Label(), MinSecretLen)
	case t.Secret != "" && len(t.Secret) < MinSecretLen:
		return fmt.Errorf("notify target %s: its secret is %d bytes; use at least %d (openssl rand -hex 32 makes one)", t.Label(), len(t.Secret), MinSecretLen)
	}
	if t.Capture == 0 {
		t.Capture = aep.CaptureMetadata
	}
	for _, e := range t.Events {
		if _, err := ParseType(string(e)); err != nil {
			return fmt.Errorf("notify target %s: %w", t.Label(), err)
		}
	}
	return nil
}

// checkTargets validates targets and their EscalateTo names.
func checkTargets(targets []Target) error {
	var errs []error
	names := map[string]bool{}
	for i := range targets {
		if err := targets[i].check(); err != nil {
			errs = append(errs, err)
			continue
		}
		if n := targets[i].Name; n != "" {
			if names[n] {
				errs = append(errs, fmt.Errorf("notify target %s: two targets have this name; names must be unique", n))
			}
			names[n] = true
		}
	}
	for _, t := range targets {
		for _, to := range t.EscalateTo {
			if !names[to] {
				errs = append(errs, fmt.Errorf("notify target %s: escalate_to names %q, which no target is called; name the target it means", t.Label(), to))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckPublicURL validates the base of the links into the inbox: an
// absolute http or https URL with a host and no user info, query or
// fragment, and none of the characters chat formats use around links
// (< > | " and spaces). It returns the base without a trailing slash.
func CheckPublicURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", errors.New("--public-url must be an absolute http or https URL of the inbox, e.g. https://bridge.example.com")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, "<>|\" \t\r\n"):
		return "", errors.New("--public-url is where the inbox is served: no user info, query or fragment (links never carry a token), and none of < > | \" or spaces")
	}
	return strings.TrimRight(raw, "/"), nil
}

// Link is the address of question id in the inbox at base: the id goes in
// the fragment, which browsers never send to a server.
func Link(base, id string) string {
	if base == "" {
		return ""
	}
	return base + "/#question=" + url.QueryEscape(id)
}

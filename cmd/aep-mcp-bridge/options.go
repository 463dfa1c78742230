package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
	"github.com/agenteventprotocol/aep-mcp-bridge/script"
)

// options maps the parsed command line to a host and a session. A flag
// value that does not parse is reported on stderr as a usage error.
func (c *config) options(stderr io.Writer) (bridge.HostOptions, bridge.Options, error) {
	bad := func(format string, a ...any) (bridge.HostOptions, bridge.Options, error) {
		fmt.Fprintf(stderr, "aep-mcp-bridge: "+format+"\n", a...)
		return bridge.HostOptions{}, bridge.Options{}, errUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return bad("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	capture, err := aep.ParseCapture(c.capture)
	if err != nil {
		return bad("--capture: %v", err)
	}
	attn, err := aep.ParseCapture(c.attention)
	if err != nil {
		return bad("--capture-attention: %v", err)
	}
	route, err := elicit.ParseRoute(c.route)
	if err != nil {
		return bad("--route: %v", err)
	}
	if !bus.ValidName(c.agent) {
		return bad("--agent %q: use 1-64 characters of [A-Za-z0-9._-], starting alphanumeric", c.agent)
	}
	logDir, err := expandHome(c.logDir)
	if err != nil {
		return bad("--log-dir: %v", err)
	}
	if err := c.headers.check(); err != nil {
		return bad("%v", err)
	}
	if err := c.headers.fromEnv(c.headerEnv); err != nil {
		return bad("%v", err)
	}
	hideSecretEnv(c.headerEnv, logger)
	if c.relayAllowPlain && c.relay == "" {
		return bad("--relay-allow-plain goes with --relay URL")
	}
	if c.answersOnly && c.answers == "" {
		return bad("--answers-only needs --answers FILE")
	}
	if (c.operatorHeader == "") != (c.trustedProxies == "") {
		return bad("--operator-header and --trusted-proxy go together: the header is believed only from the proxies' addresses")
	}
	var proxies []netip.Prefix
	if c.trustedProxies != "" {
		if proxies, err = endpoint.ParseProxies(c.trustedProxies); err != nil {
			return bad("%v", err)
		}
	}
	var rules *script.Rules
	if c.answers != "" {
		if rules, err = loadAnswers(c.answers); err != nil {
			return bridge.HostOptions{}, bridge.Options{}, err
		}
		logger.Info("scripted answers loaded", "file", c.answers, "rules", rules.Len(), "answers_only", c.answersOnly)
	}
	var pol *policy.Reloader
	if c.policy != "" {
		if pol, err = loadPolicy(c.policy, logger); err != nil {
			return bridge.HostOptions{}, bridge.Options{}, err
		}
	}
	ho := bridge.HostOptions{Agent: c.agent, Root: inbox.Handler(), Logger: logger,
		AllowHosts: c.allowHosts, AllowOrigins: c.allowOrigins, OperatorHeader: c.operatorHeader, TrustedProxies: proxies}
	if c.listen != "off" {
		ho.Listen = c.listen
	}
	if ho.Notify, err = c.notify.options(c.stateDir, redactOptions(c.redactEnv), logger); err != nil {
		return bad("%v", err)
	}
	if c.relay != "" {
		ho.Relays, ho.PlainRelay = []string{c.relay}, c.relayAllowPlain
	}

	if ho.NATS, err = c.nats.options(); err != nil {
		return bad("%v", err)
	}
	if ho.Listen != "" || len(ho.Relays) > 0 || ho.NATS != nil {
		dir, err := stateDir(c.stateDir)
		if err != nil {
			return bridge.HostOptions{}, bridge.Options{}, err
		}
		if ho.Token, c.tokenWhere, err = loadToken(c.token, dir, c.insecureToken); err != nil {
			return bridge.HostOptions{}, bridge.Options{}, err
		}
		if ho.NATS != nil {
			// The newest identities taken, so a restart still refuses an
			// older document put back on the plane.
			ho.NATS.GenerationFile = filepath.Join(dir, "nats-identities-"+ho.NATS.Prefix+".gen")
		}
		if ho.Listen != "" {
			ho.Identities = store.Path(dir)
			if c.name == "" {
				warnScopesTrustServerName(ho.Identities, logger)
			}
		}
	}
	o := bridge.Options{
		Command: c.command, Agent: c.agent, Name: c.name, Timeout: c.timeout, Keepalive: c.keepalive,
		LogDir: logDir, Capture: capture, AttentionCapture: attn, Redact: redactOptions(c.redactEnv),
		Route: route, Logger: logger, Answers: rules, AnswersOnly: c.answersOnly,
		URL: c.url, Header: c.headers.header(), Transport: c.transport, Policy: pol,
	}
	return ho, o, nil
}

// warnScopesTrustServerName says, once at start, that the identity
// document at path has operators scoped by server and that without --name
// their scopes match the name the MCP server gives itself. A document
// that does not load says nothing here: the endpoint reports it.
func warnScopesTrustServerName(path string, log *slog.Logger) {
	d, err := store.Load(path)
	if err != nil {
		return
	}
	var scoped []string
	for _, o := range d.Operators {
		if !o.Servers.All() {
			scoped = append(scoped, o.Name)
		}
	}
	if len(scoped) > 0 {
		log.Warn("operator scopes match the name the MCP server gives itself (its serverInfo; the first it gives stays), so the server picks which scoped operators see its questions; give --name to set the name scopes match",
			"scoped_operators", strings.Join(scoped, ","))
	}
}

// redactOptions configures the redaction pipeline: home paths, and the
// values of the environment variables --redact-env names as secrets.
func redactOptions(redactEnv string) aep.RedactOptions {
	home, _ := os.UserHomeDir()
	redact := aep.RedactOptions{Home: home}
	for _, name := range strings.Split(redactEnv, ",") {
		if name = strings.TrimSpace(name); name != "" {
			if v := os.Getenv(name); v != "" {
				redact.Secrets = append(redact.Secrets, v)
			}
		}
	}
	return redact
}

// listFlag collects a repeatable flag's values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// items splits each value at commas: what a flag that is both repeated
// and comma-separated gave, trimmed, without empty items.
func (l listFlag) items() []string {
	var out []string
	for _, v := range l {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

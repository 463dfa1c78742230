package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// errUsage marks a command-line error already reported on stderr.
var errUsage = errors.New("usage")

// exitCode maps run's error to the process exit status.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, operator.ErrUnreachable):
		return exitUnreachable
	}
	return exitFailure
}

// config is the parsed command line.
type config struct {
	timeout, keepalive time.Duration
	logDir             string
	agent, name        string
	capture, attention string
	route              string
	logLevel           string
	redactEnv          string
	listen, token      string
	insecureToken      bool
	relay              string
	relayAllowPlain    bool
	answers            string
	answersOnly        bool
	policy             string
	url, transport     string
	headers            headerFlag
	headerEnv          listFlag
	allowHosts         listFlag
	allowOrigins       listFlag
	stateDir           string
	operatorHeader     string
	trustedProxies     string
	cpuProfile         string
	notify             notifyFlags
	nats               natsFlags
	command            []string
	version            bool

	// tokenWhere says where the token came from, once loaded.
	tokenWhere string
}

// topUsage prints the binary's own usage: the bridge's synopsis, the
// subcommands and what the bridge does; the flags follow.
func topUsage(w io.Writer) {
	fmt.Fprint(w, `usage: aep-mcp-bridge [flags] -- COMMAND [ARGS...]
       aep-mcp-bridge [flags] --url https://host/mcp [--header 'Authorization: Bearer …' ...]
       aep-mcp-bridge SUBCOMMAND [flags] [ARGS...]

Fronts the MCP server COMMAND (spawned over stdio, after --) for the MCP
client on this process's stdin/stdout. Each elicitation/create from the
server becomes an AEP attention request (kind "form") that an operator
answers; the answer goes back to the server as an ElicitResult.

Subcommands (aep-mcp-bridge SUBCOMMAND --help for each):
`)
	writeCommandList(w)
	fmt.Fprint(w, `
Exit status: 0 done, 1 an error, 2 a command-line error (nothing was
started or written); the operator subcommands document theirs.
`)
}

// parseFlags parses the bridge's command line (no subcommand).
func parseFlags(args []string, s stdio) (*config, error) {
	c := &config{}
	fs := topFlagSet(c)
	if err := c.parse(fs, args, s); err != nil {
		return nil, err
	}
	return c, nil
}

// topFlagSet is the bridge's flag set: every flag serve takes too, and
// --version.
func topFlagSet(c *config) *flag.FlagSet {
	fs := c.flagSet("aep-mcp-bridge", topUsage)
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	return fs
}

// flagSet defines the bridge's flags on a new flag set, for the bridge
// and for serve, which takes every one of them.
func (c *config) flagSet(name string, usage func(io.Writer)) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		usage(fs.Output())
		printFlags(fs)
	}
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "how long a question waits for an answer; then attention.timeout, and the server gets cancel")
	fs.StringVar(&c.logDir, "log-dir", "~/.aep/logs", "JSONL session logs at DIR/<agent>/<session>.jsonl; \"off\" disables them")
	fs.StringVar(&c.agent, "agent", "aep-mcp-bridge", "the AEP agent identity")
	fs.StringVar(&c.name, "name", "", "the server's display name (the subject of its questions); default: its serverInfo.name")
	fs.StringVar(&c.capture, "capture", "metadata", "global capture ceiling: none, metadata, redacted or full")
	fs.StringVar(&c.attention, "capture-attention", "redacted", "capture ceiling for attention.* events: none, metadata, redacted or full")
	fs.StringVar(&c.route, "route", "both", "who may answer: remote (operators only), client (the MCP client only; the bus observes), both (first answer wins)")
	fs.DurationVar(&c.keepalive, "keepalive", 15*time.Second, "progress interval for in-flight requests while a question is pending; 0 disables")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8787", "the embedded AEP endpoint's address; \"off\" disables it")
	fs.StringVar(&c.token, "token", "", "bearer token for the AEP endpoint (or env AEP_TOKEN), at least 32 characters; default: generated once and stored in the state folder")
	fs.BoolVar(&c.insecureToken, "insecure-token", false, "accept a --token or AEP_TOKEN shorter than 32 characters")
	fs.Var(&c.allowHosts, "allow-host", "a further Host the endpoint serves (name, or name:port), besides its listen address, localhost and loopback IPs; repeatable")
	fs.Var(&c.allowOrigins, "allow-origin", "a further browser origin (scheme://host[:port]) that may use the endpoint, besides its own; repeatable")
	fs.StringVar(&c.relay, "relay", "", "also connect out to the AEP relay at this URL (its /socket) as an emitter that accepts control.attention.respond")
	fs.BoolVar(&c.relayAllowPlain, "relay-allow-plain", false, "let --relay link over plain ws:// to an address off this machine once the relay proved the token; its events and commands then travel in clear")
	fs.StringVar(&c.url, "url", "", "a remote MCP server's endpoint (streamable HTTP, or HTTP+SSE) instead of a command")
	fs.Var(&c.headers, "header", "a header for a remote server, 'Name: value'; repeatable")
	fs.Var(&c.headerEnv, "header-env", "an environment variable holding a header for a remote server as 'Name: value' (kept off the command line); repeatable")
	fs.StringVar(&c.transport, "transport", "", "remote transport: streamable or sse (default: streamable, falling back to sse)")
	fs.StringVar(&c.answers, "answers", "", "a JSON file of rules that answer questions without a human (see the README)")
	fs.BoolVar(&c.answersOnly, "answers-only", false, "with --answers: cancel every question no rule answers, instead of waiting for operators")
	fs.StringVar(&c.policy, "policy", "", "an approval policy file (YAML or JSON) that decides which tool calls pass, are denied, or wait for operators' approval; reloaded on change and on SIGHUP")
	fs.StringVar(&c.stateDir, "state-dir", "", "folder for the token and other state; default $XDG_STATE_HOME/aep-mcp-bridge or ~/.local/state/aep-mcp-bridge")
	fs.StringVar(&c.operatorHeader, "operator-header", "", "take a named operator's name from this request header (e.g. X-Forwarded-User), set by an authenticating reverse proxy at a --trusted-proxy address; the name needs an operators add NAME --proxy record")
	fs.StringVar(&c.trustedProxies, "trusted-proxy", "", "the addresses (CIDRs or IPs, comma-separated) of the reverse proxies whose --operator-header is believed: the TCP peer, never X-Forwarded-For")
	fs.StringVar(&c.redactEnv, "redact-env", "", "comma-separated environment variable names whose values are secrets to redact")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of this process to FILE until it exits (read it with go tool pprof)")
	c.notify.define(fs)
	c.nats.define(fs)
	return fs
}

// parse parses args and checks them: an upstream command after -- or
// --url, and sane durations. A word that is not a flag and does not
// follow -- is refused here, before anything is started or written.
func (c *config) parse(fs *flag.FlagSet, args []string, s stdio) error {
	stderr := s.err
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	if c.version {
		fmt.Fprintln(s.out, versionLine())
		return errHelp
	}
	c.command = fs.Args()
	if n := len(args) - len(c.command); len(c.command) > 0 && (n == 0 || args[n-1] != "--") {
		return notACommand(stderr, c.command[0])
	}
	if c.url != "" && len(c.command) > 0 {
		fmt.Fprintln(stderr, "aep-mcp-bridge: give either --url or a command after --, not both")
		return errUsage
	}
	if (c.transport != "" || len(c.headers) > 0 || len(c.headerEnv) > 0) && c.url == "" {
		fmt.Fprintln(stderr, "aep-mcp-bridge: --transport, --header and --header-env apply to --url")
		return errUsage
	}
	if c.url == "" && len(c.command) == 0 {
		fmt.Fprintln(stderr, "aep-mcp-bridge: no upstream server command; pass it after --, e.g.: aep-mcp-bridge -- npx -y @modelcontextprotocol/server-everything")
		fmt.Fprintln(stderr, "(or --url URL for a remote server; aep-mcp-bridge help lists the subcommands)")
		return errUsage
	}
	if c.timeout <= 0 {
		fmt.Fprintln(stderr, "aep-mcp-bridge: --timeout must be positive")
		return errUsage
	}
	if c.keepalive < 0 {
		fmt.Fprintln(stderr, "aep-mcp-bridge: --keepalive must be 0 (off) or positive")
		return errUsage
	}
	return nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	s := stdio{in: stdin, out: stdout, err: stderr}
	if len(args) > 0 {
		if c, ok := lookupCommand(args[0]); ok {
			return c.run(ctx, args[1:], s)
		}
	}
	c, err := parseFlags(args, s)
	if err != nil {
		return err
	}
	return runBridge(ctx, c, stdin, stdout, stderr)
}

// runBridge is the bridge itself: a host (endpoint, links) and one session
// between this process's stdio and the upstream server.
func runBridge(ctx context.Context, c *config, stdin io.Reader, stdout, stderr io.Writer) error {
	ho, o, err := c.options(stderr)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	in, restore := clientStdin(stdin)
	defer restore()
	o.Client, o.ClientOut, o.ServerStderr = in, stdout, stderr
	h, err := bridge.NewHost(ho)
	if err != nil {
		return err
	}
	if addr := h.Addr(); addr != "" {
		announce(stderr, addr, c)
	}
	b, err := h.NewSession(o)
	if err != nil {
		h.Close(context.Background())
		return err
	}
	if p := b.LogPath(); p != "" {
		o.Logger.Info("session log", "path", p)
	}
	if o.Policy != nil {
		stopWatch, err := watchPolicy(ctx, c.policy, o.Policy, o.Logger)
		if err != nil {
			h.Close(context.Background())
			return err
		}
		defer stopWatch()
	}
	runErr := b.Run(ctx)
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Close(closeCtx); err != nil {
		o.Logger.Warn("shutting down", "err", err)
	}
	return runErr
}

// announce prints where the endpoint serves, where its token is, and the
// inbox's address. It never prints the token: MCP hosts keep their
// servers' stderr in log files. `aep-mcp-bridge inbox` prints the link
// with the token to whoever asks for it on their own terminal.
func announce(stderr io.Writer, addr string, c *config) {
	where := c.tokenWhere
	from := "stored in " + where
	if where == "--token" || where == "AEP_TOKEN" {
		from = "from " + where
	}
	fmt.Fprintf(stderr, "aep-mcp-bridge: AEP endpoint on http://%s (token %s)\n", addr, from)
	fmt.Fprintf(stderr, "aep-mcp-bridge: operator inbox at http://%s/; open it with: %s\n", addr, inboxCommand(addr, where, c.stateDir))
}

// headerFlag collects repeated --header 'Name: value' flags. A value
// may be a credential: Set never fails, so the flag package never echoes
// one, and check and fromEnv name the flag, never the value.
type headerFlag []string

func (h *headerFlag) String() string { return fmt.Sprintf("%d header(s)", len(*h)) }

func (h *headerFlag) Set(v string) error {
	*h = append(*h, v)
	return nil
}

// check refuses a --header that is not 'Name: value'.
func (h headerFlag) check() error {
	for i, v := range h {
		if !isHeader(v) {
			return fmt.Errorf("--header (the %s of %d): want 'Name: value', e.g. --header 'Authorization: Bearer …'; the value is not shown, since it may be a credential",
				ordinal(i+1), len(h))
		}
	}
	return nil
}

// fromEnv adds the headers that --header-env names.
func (h *headerFlag) fromEnv(names []string) error {
	for _, name := range names {
		v, ok := os.LookupEnv(name)
		if !ok {
			return fmt.Errorf("--header-env %s: the variable is not set; set it to 'Name: value'", name)
		}
		if !isHeader(v) {
			return fmt.Errorf("--header-env %s: the variable holds no 'Name: value' header", name)
		}
		*h = append(*h, v)
	}
	return nil
}

// isHeader reports whether v is 'Name: value' with a name.
func isHeader(v string) bool {
	name, _, ok := strings.Cut(v, ":")
	return ok && strings.TrimSpace(name) != ""
}

// ordinal spells n as 1st, 2nd, 3rd, 4th….
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

func (h headerFlag) header() http.Header {
	out := http.Header{}
	for _, kv := range h {
		name, value, _ := strings.Cut(kv, ":")
		out.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return out
}

// expandHome resolves a leading ~ and the value "off".
func expandHome(p string) (string, error) {
	if p == "off" || p == "" {
		return "", nil
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot resolve ~: %w; pass an absolute path", err)
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	return p, nil
}

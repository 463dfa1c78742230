package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/bridge"
	"github.com/agenteventprotocol/aep-mcp-bridge/gateway"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
)

const serveUsage = `usage: aep-mcp-bridge serve [flags] -- COMMAND [ARGS...]   # a spawned server per client session
       aep-mcp-bridge serve [flags] --url URL              # a remote server, one upstream session per client session

Serves MCP clients over streamable HTTP at http://--mcp-listen/mcp (and the
2024-11-05 HTTP+SSE transport at /sse). Each client session is a bridge
session of its own, with its own upstream, AEP session, log and questions;
every question reaches the one AEP endpoint and inbox.
`

// serveConfig is serve's own flags, beside the bridge's.
type serveConfig struct {
	mcpListen, mcpToken, mcpAuth string
	maxSessions                  int
	sessionIdle                  time.Duration
}

func parseServeFlags(args []string, s stdio) (*config, *serveConfig, error) {
	c, sc := &config{}, &serveConfig{}
	fs := c.flagSet("aep-mcp-bridge serve", func(w io.Writer) { fmt.Fprint(w, serveUsage) })
	fs.StringVar(&sc.mcpListen, "mcp-listen", "127.0.0.1:8788", "where MCP clients connect; streamable HTTP at /mcp")
	fs.StringVar(&sc.mcpToken, "mcp-token", "", "bearer token MCP clients must send (or env AEP_MCP_TOKEN); default: generated once and stored 0600 beside the AEP token")
	fs.StringVar(&sc.mcpAuth, "mcp-auth", "token", "token, or none: no client token (allowed only on a loopback --mcp-listen)")
	fs.IntVar(&sc.maxSessions, "max-sessions", 64, "concurrent client sessions; at the bound the least recently used idle one ends to make room; 503 with Retry-After only when every one is busy")
	fs.DurationVar(&sc.sessionIdle, "session-idle", 30*time.Minute, "a session with no traffic for this long ends")
	if err := c.parse(fs, args, s); err != nil {
		return nil, nil, err
	}
	bad := func(msg string) (*config, *serveConfig, error) {
		fmt.Fprintln(s.err, "aep-mcp-bridge serve: "+msg)
		return nil, nil, errUsage
	}
	switch {
	case sc.maxSessions <= 0:
		return bad("--max-sessions must be positive")
	case sc.sessionIdle <= 0:
		return bad("--session-idle must be positive")
	case sc.mcpAuth != "token" && sc.mcpAuth != "none":
		return bad(fmt.Sprintf("--mcp-auth %q: want token or none", sc.mcpAuth))
	case sc.mcpAuth == "none" && sc.mcpToken != "":
		return bad("--mcp-auth none and --mcp-token contradict each other; give one")
	}
	return c, sc, nil
}

// loopback reports whether a listen address binds only loopback
// interfaces: localhost, 127.0.0.0/8 or ::1. An empty host (all
// interfaces) is not.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runServe is gateway mode: a host (AEP endpoint, links) and a gateway
// that gives every MCP client session a bridge session of its own.
func runServe(ctx context.Context, args []string, s stdio) error {
	stderr := s.err
	c, sc, err := parseServeFlags(args, s)
	if err != nil {
		return err
	}
	ho, o, err := c.options(stderr)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	o.ServerStderr = stderr
	token, where, err := sc.clientToken(c)
	if err != nil {
		return err
	}
	dir, err := stateDir(c.stateDir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", sc.mcpListen)
	if err != nil {
		return fmt.Errorf("listening on %s for MCP clients: %w; pass --mcp-listen with a free address", sc.mcpListen, err)
	}
	h, err := bridge.NewHost(ho)
	if err != nil {
		ln.Close()
		return err
	}
	if addr := h.Addr(); addr != "" {
		announce(stderr, addr, c)
	}
	g, err := gateway.New(gateway.Options{Host: h, Session: o, Token: token, Identities: store.Path(dir), FleetSecret: ho.Token, AllowHosts: c.allowHosts,
		AllowOrigins: c.allowOrigins, MaxSessions: sc.maxSessions, SessionIdle: sc.sessionIdle, Logger: o.Logger})
	if err != nil {
		ln.Close()
		h.Close(context.Background())
		return err
	}
	if o.Policy != nil {
		stopWatch, err := watchPolicy(ctx, c.policy, o.Policy, o.Logger)
		if err != nil {
			ln.Close()
			g.Close(context.Background())
			h.Close(context.Background())
			return err
		}
		defer stopWatch()
	}
	fmt.Fprintf(stderr, "aep-mcp-bridge: MCP gateway on http://%s/mcp (client token from %s; named clients from %s)\n", ln.Addr(), where, store.Path(dir))
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Close(closeCtx); err != nil {
		o.Logger.Warn("shutting down the gateway", "err", err)
	}
	if serveErr == nil {
		serveErr = <-served
	}
	if err := h.Close(closeCtx); err != nil {
		o.Logger.Warn("shutting down", "err", err)
	}
	if serveErr != nil {
		return fmt.Errorf("serving MCP clients: %w", serveErr)
	}
	return nil
}

// clientToken returns the token MCP clients must send and where it came
// from, or "" with --mcp-auth none, which only a loopback address may use.
func (sc *serveConfig) clientToken(c *config) (token, where string, err error) {
	if sc.mcpAuth == "none" {
		if !loopback(sc.mcpListen) {
			return "", "", errors.New("--mcp-auth none is allowed only on a loopback --mcp-listen (127.0.0.1, [::1] or localhost): on any other address anyone who can reach it could drive your MCP servers; drop --mcp-auth none, or listen on loopback")
		}
		return "", "nowhere: --mcp-auth none", nil
	}
	dir, err := stateDir(c.stateDir)
	if err != nil {
		return "", "", err
	}
	return loadNamedToken(tokenSource{flag: sc.mcpToken, flagName: "--mcp-token", env: "AEP_MCP_TOKEN", file: "mcp-token"}, dir, c.insecureToken)
}

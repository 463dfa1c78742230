package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestRelayAllowPlainReachesTheHost: --relay-allow-plain lets the --relay
// link run over plain ws:// off this machine, for the bridge and for
// serve, and means nothing without --relay.
func TestRelayAllowPlainReachesTheHost(t *testing.T) {
	tok := strings.Repeat("t", 32)
	for _, tc := range []struct {
		name    string
		args    []string
		plain   bool
		refused string
	}{
		{name: "without the flag", args: []string{"--relay", "ws://relay.example:9000/socket"}},
		{name: "with the flag", args: []string{"--relay", "ws://relay.example:9000/socket", "--relay-allow-plain"}, plain: true},
		{name: "without --relay", args: []string{"--relay-allow-plain"}, refused: "--relay-allow-plain goes with --relay URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"--listen", "off", "--token", tok, "--state-dir", t.TempDir(), "--log-dir", "off"}, tc.args...)
			c, err := parseFlags(append(args, "--", "true"), stdio{out: io.Discard, err: &stderr})
			if err != nil {
				t.Fatalf("parseFlags: %v\n%s", err, stderr.String())
			}
			ho, _, err := c.options(&stderr)
			if tc.refused != "" {
				if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), tc.refused) {
					t.Fatalf("got %v, %q; want a usage error saying %q", err, stderr.String(), tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("options: %v\n%s", err, stderr.String())
			}
			if ho.PlainRelay != tc.plain || len(ho.Relays) != 1 {
				t.Fatalf("PlainRelay %v, Relays %v; want %v and the relay", ho.PlainRelay, ho.Relays, tc.plain)
			}
		})
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, nil, &help, io.Discard); exitCode(err) != 0 {
		t.Fatal(err)
	}
	if !strings.Contains(help.String(), "-relay-allow-plain") {
		t.Fatal("serve does not take --relay-allow-plain")
	}
}

// TestAllowPlainReachesTheOperatorClient: the operator commands' client
// refuses a plain endpoint off this machine unless --allow-plain is given.
func TestAllowPlainReachesTheOperatorClient(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		plain bool
	}{
		{args: nil},
		{args: []string{"--allow-plain"}, plain: true},
	} {
		fs := newFlagSet("pending", "pending", "")
		ca := clientFlags(fs)
		if err := fs.Parse(append([]string{"--endpoint", "http://bridge.example:8787", "--token", strings.Repeat("t", 32)}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		c, err := newClient(ca)
		if err != nil {
			t.Fatal(err)
		}
		if c.PlainRemote != tc.plain {
			t.Errorf("flags %q: PlainRemote %v; want %v", tc.args, c.PlainRemote, tc.plain)
		}
	}
}

// TestScopesTrustTheServersNameWarning: a bridge serving an endpoint whose
// operators include a scoped one, and started without --name, says once
// on stderr that scopes then match the name the server gives itself; with
// --name, with no scoped operator, or without an endpoint, it says
// nothing.
func TestScopesTrustTheServersNameWarning(t *testing.T) {
	tok := strings.Repeat("t", 32)
	const warning = "operator scopes match the name the MCP server gives itself"
	for _, tc := range []struct {
		name      string
		operators [][]string // operators add arguments
		args      []string
		warns     bool
	}{
		{name: "a scoped operator, no --name", operators: [][]string{{"alice"}, {"bob", "--servers", "deploy-*"}, {"carol", "--servers", "billing"}}, warns: true},
		{name: "a scoped operator, --name", operators: [][]string{{"bob", "--servers", "deploy-*"}}, args: []string{"--name", "deploy-web"}},
		{name: "no scoped operator", operators: [][]string{{"alice"}}},
		{name: "no operators", operators: nil},
		{name: "no endpoint", operators: [][]string{{"bob", "--servers", "deploy-*"}}, args: []string{"--listen", "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			for _, o := range tc.operators {
				addOp(t, state, o...)
			}
			var stderr bytes.Buffer
			args := append([]string{"--listen", "127.0.0.1:0", "--token", tok, "--state-dir", state, "--log-dir", "off"}, tc.args...)
			c, err := parseFlags(append(args, "--", "true"), stdio{out: io.Discard, err: &stderr})
			if err != nil {
				t.Fatalf("parseFlags: %v\n%s", err, stderr.String())
			}
			if _, _, err := c.options(&stderr); err != nil {
				t.Fatalf("options: %v\n%s", err, stderr.String())
			}
			want := 0
			if tc.warns {
				want = 1
			}
			if got := strings.Count(stderr.String(), warning); got != want {
				t.Errorf("stderr says %q %d times; want %d. stderr:\n%s", warning, got, want, stderr.String())
			}
			if tc.warns && !strings.Contains(stderr.String(), "--name") {
				t.Errorf("the warning does not say what to do (--name):\n%s", stderr.String())
			}
		})
	}
}

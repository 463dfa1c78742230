package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNATSFlagsReachTheHost: --nats and its flags put the operator plane
// on NATS for the bridge and for serve, with the token loaded even with
// --listen off (commands between processes are sealed with it); flags
// that make no sense are refused before anything starts, and a password
// in a URL is not echoed.
func TestNATSFlagsReachTheHost(t *testing.T) {
	t.Parallel()
	tok := strings.Repeat("t", 32)
	dir := t.TempDir()
	creds := filepath.Join(dir, "plane.creds")
	if err := os.WriteFile(creds, []byte("not read until connecting"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		prefix  string // "" for no plane on NATS
		refused string
	}{
		{name: "no --nats", args: nil},
		{name: "--nats", args: []string{"--nats", "nats://n1:4222,nats://n2:4222"}, prefix: "aep"},
		{name: "--nats-prefix", args: []string{"--nats", "nats://n1:4222", "--nats-prefix", "team-b", "--nats-creds", creds}, prefix: "team-b"},
		{name: "creds without --nats", args: []string{"--nats-creds", creds}, refused: "--nats-creds and --nats-tls-* go with --nats URL"},
		{name: "a missing creds file", args: []string{"--nats", "nats://n1:4222", "--nats-creds", filepath.Join(dir, "none")}, refused: "--nats-creds:"},
		{name: "a prefix with a dot", args: []string{"--nats", "nats://n1:4222", "--nats-prefix", "a.b"}, refused: `--nats-prefix "a.b"`},
		{name: "a cert without its key", args: []string{"--nats", "nats://n1:4222", "--nats-tls-cert", creds}, refused: "--nats-tls-cert and --nats-tls-key go together"},
		{name: "a CA file that is no PEM", args: []string{"--nats", "nats://n1:4222", "--nats-tls-ca", creds}, refused: "no PEM certificate"},
		{name: "a space in the list", args: []string{"--nats", "nats://u:secret-pass@n1:4222, ,nats://n2"}, refused: "://[redacted]@n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"--listen", "off", "--token", tok, "--state-dir", t.TempDir(), "--log-dir", "off"}, tc.args...)
			c, err := parseFlags(append(args, "--", "true"), stdio{out: io.Discard, err: &stderr})
			if err != nil {
				t.Fatalf("parseFlags: %v\n%s", err, stderr.String())
			}
			ho, _, err := c.options(&stderr)
			if strings.Contains(stderr.String(), "secret-pass") {
				t.Fatalf("a NATS password was printed: %s", stderr.String())
			}
			if tc.refused != "" {
				if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), tc.refused) {
					t.Fatalf("got %v, %q; want a usage error saying %q", err, stderr.String(), tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("options: %v\n%s", err, stderr.String())
			}
			switch {
			case tc.prefix == "" && ho.NATS != nil:
				t.Fatalf("a plane on NATS without --nats: %+v", ho.NATS)
			case tc.prefix != "" && (ho.NATS == nil || ho.NATS.Prefix != tc.prefix || ho.Token != tok):
				t.Fatalf("NATS %+v, token set %v; want prefix %q and the token", ho.NATS, ho.Token != "", tc.prefix)
			}
		})
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, nil, &help, io.Discard); exitCode(err) != 0 {
		t.Fatal(err)
	}
	for _, f := range []string{"-nats ", "-nats-creds", "-nats-prefix", "-nats-tls-ca", "-nats-tls-cert", "-nats-tls-key"} {
		if !strings.Contains(help.String(), f) {
			t.Errorf("serve does not take %s", f)
		}
	}
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
)

// natsFlags put the operator plane on NATS JetStream (issue: many
// machines, one inbox): --nats and the flags that go with it.
type natsFlags struct {
	urls, creds, prefix string
	ca, cert, key       string
}

func (n *natsFlags) define(fs *flag.FlagSet) {
	n.defineWith(fs, "put the operator plane on the NATS JetStream cluster at these URLs (comma-separated, nats:// or tls://): every bridge and gateway given the same --nats, --nats-prefix and token serves the same inbox; default: the plane of this process")
}

// defineWith registers the flags, --nats with the usage natsUsage.
func (n *natsFlags) defineWith(fs *flag.FlagSet, natsUsage string) {
	fs.StringVar(&n.urls, "nats", "", natsUsage)
	fs.StringVar(&n.creds, "nats-creds", "", "a NATS credentials file (JWT and NKey seed) for --nats; the cluster's credentials, never an operator's")
	fs.StringVar(&n.prefix, "nats-prefix", "aep", "names the plane's streams, buckets and subjects on --nats, so several fleets share one cluster")
	fs.StringVar(&n.ca, "nats-tls-ca", "", "PEM file of the CAs that sign the NATS servers' certificates (default: the system's)")
	fs.StringVar(&n.cert, "nats-tls-cert", "", "PEM client certificate for NATS servers that require one (with --nats-tls-key)")
	fs.StringVar(&n.key, "nats-tls-key", "", "PEM private key of --nats-tls-cert")
}

// validPrefix is what --nats-prefix may be: a NATS subject token and a
// stream name both.
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// options returns the plane's options, or nil without --nats.
func (n *natsFlags) options() (*natsplane.Options, error) {
	if n.urls == "" {
		if n.creds != "" || n.ca != "" || n.cert != "" || n.key != "" {
			return nil, errors.New("--nats-creds and --nats-tls-* go with --nats URL")
		}
		return nil, nil
	}
	for _, u := range strings.Split(n.urls, ",") {
		if u = strings.TrimSpace(u); u == "" || strings.ContainsAny(u, " \t") {
			return nil, fmt.Errorf("--nats: %q is not a list of NATS URLs; give them comma-separated, e.g. nats://n1:4222,nats://n2:4222", redactUserinfo(n.urls))
		}
	}
	if !validPrefix.MatchString(n.prefix) {
		return nil, fmt.Errorf("--nats-prefix %q: use 1-32 characters of [A-Za-z0-9_-], starting alphanumeric", n.prefix)
	}
	if (n.cert == "") != (n.key == "") {
		return nil, errors.New("--nats-tls-cert and --nats-tls-key go together")
	}
	if n.creds != "" {
		if _, err := os.Stat(n.creds); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
	}
	o := &natsplane.Options{URLs: n.urls, Creds: n.creds, Prefix: n.prefix}
	if n.ca == "" && n.cert == "" {
		return o, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if n.ca != "" {
		pem, err := os.ReadFile(n.ca)
		if err != nil {
			return nil, fmt.Errorf("--nats-tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--nats-tls-ca %s: no PEM certificate in it", n.ca)
		}
	}
	if n.cert != "" {
		c, err := tls.LoadX509KeyPair(n.cert, n.key)
		if err != nil {
			return nil, fmt.Errorf("--nats-tls-cert and --nats-tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	o.TLS = cfg
	return o, nil
}

// redactUserinfo hides the passwords in URLs given on the command line.
func redactUserinfo(s string) string { return userinfo.ReplaceAllString(s, "://[redacted]@") }

var userinfo = regexp.MustCompile(`://[^@/]*@`)

package natsnode

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configure one node. A zero field means its documented default.
type Options struct {
	// Name names the node in its cluster; it must stay the same across
	// restarts, since JetStream's Raft groups know their peers by it.
	// "" means "aep-plane".
	Name string
	// StoreDir holds the node's JetStream store. Required unless Seed: a
	// node without one would keep the plane in memory, and lose it with
	// the process.
	StoreDir string
	// Seed runs the node without JetStream, as the route seed of a
	// cluster whose ports are picked by the system (see StartCluster).
	Seed bool
	// Cluster names the cluster the node belongs to; "" runs it alone.
	Cluster string
	// Routes are the cluster addresses of nodes already running (their
	// ClusterURL), the seeds this node routes to; nil for the first.
	Routes []string
	// User and Password, when set, are the credentials every client must
	// present (the cluster's credentials, never an operator's).
	User, Password string
	// MaxStore and MaxMemory bound JetStream's file and memory storage
	// in bytes; 0 means 1 GiB and 64 MiB.
	MaxStore, MaxMemory int64
	// ReadyWait bounds how long Start waits for the node to accept
	// clients; 0 means 10s.
	ReadyWait time.Duration
}

// Node is one running NATS server with JetStream.
type Node struct {
	opts Options
	srv  *server.Server
}

// Start starts a node on loopback with system-picked ports and waits
// until it accepts clients.
func Start(o Options) (*Node, error) {
	if o.StoreDir == "" && !o.Seed {
		return nil, errors.New("a NATS node needs a store directory for JetStream; pass one (the bridge's state folder)")
	}
	if o.Name == "" {
		o.Name = "aep-plane"
	}
	if o.MaxStore == 0 {
		o.MaxStore = 1 << 30
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = 64 << 20
	}
	if o.ReadyWait == 0 {
		o.ReadyWait = 10 * time.Second
	}
	so := &server.Options{
		ServerName: o.Name, Host: "127.0.0.1", Port: server.RANDOM_PORT,
		NoSigs: true, NoLog: true, Username: o.User, Password: o.Password,
		DisableJetStreamBanner: true,
	}
	if !o.Seed {
		if err := os.MkdirAll(o.StoreDir, 0o700); err != nil {
			return nil, fmt.Errorf("making the NATS store directory: %w", err)
		}
		so.JetStream, so.StoreDir = true, filepath.Clean(o.StoreDir)
		so.JetStreamMaxStore, so.JetStreamMaxMemory = o.MaxStore, o.MaxMemory
	}
	if o.Cluster != "" {
		so.Cluster = server.ClusterOpts{Name: o.Cluster, Host: "127.0.0.1", Port: server.RANDOM_PORT}
		for _, r := range o.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("route %q: %w", r, err)
			}
			so.Routes = append(so.Routes, u)
		}
	}
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("configuring the NATS node %s: %w", o.Name, err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(o.ReadyWait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("the NATS node %s did not accept clients within %v; see whether its store directory %s is usable", o.Name, o.ReadyWait, o.StoreDir)
	}
	return &Node{opts: o, srv: srv}, nil
}

// Name returns the node's name.
func (n *Node) Name() string { return n.opts.Name }

// URL returns the client URL of the node (nats://127.0.0.1:port).
func (n *Node) URL() string { return n.srv.ClientURL() }

// ClusterURL returns the node's route address, for the Routes of nodes
// that join it, or "" when it runs alone.
func (n *Node) ClusterURL() string {
	a := n.srv.ClusterAddr()
	if a == nil {
		return ""
	}
	return fmt.Sprintf("nats-route://%s", a.String())
}

// Server returns the embedded server, for tests that ask it about its
// Raft groups.
func (n *Node) Server() *server.Server { return n.srv }

// Running reports whether the node still runs.
func (n *Node) Running() bool { return n.srv.Running() }

// Stop shuts the node down at once and waits until it has stopped: its
// clients' connections drop. The server steps down from the Raft groups
// it leads as it goes (nats-server does so on every shutdown). Its store
// stays.
func (n *Node) Stop() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}

// waitFor waits until cond holds, checking it every tick, or until ctx
// ends; what names the condition in the error.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

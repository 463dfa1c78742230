package natsnode

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// ClusterOptions configure a cluster of nodes on this machine.
type ClusterOptions struct {
	// Name is the cluster's name; "" means "aep-plane".
	Name string
	// Nodes is how many nodes; 0 means 3, the fewest that survive the
	// loss of one with replicas 3.
	Nodes int
	// Dir holds one store directory per node. Required.
	Dir string
	// User and Password, when set, are the credentials of every node.
	User, Password string
	// MaxStore bounds each node's JetStream file storage in bytes; 0
	// means Options.MaxStore's default.
	MaxStore int64
}

// Cluster is nodes routed to each other, each with JetStream, and the
// seed they found each other through.
//
// JetStream refuses to start a clustered node that has no configured
// route, and a route names a port; with ports picked by the system, the
// first node could name none. So the cluster starts with a seed: a node
// without JetStream (never part of a Raft group, holding no data) whose
// route address is known once it runs; every JetStream node routes to
// it, and to the nodes running when it starts, and gossip completes the
// mesh. Losing the seed loses no data and no route already made.
type Cluster struct {
	opts  ClusterOptions
	seed  *Node
	nodes []*Node
}

// StartCluster starts the seed, then the nodes, and waits until
// JetStream has a meta leader that knows every node, or ctx ends.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("a NATS cluster needs a directory for its nodes' stores")
	}
	if o.Name == "" {
		o.Name = "aep-plane"
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	c := &Cluster{opts: o, nodes: make([]*Node, o.Nodes)}
	seed, err := Start(Options{Name: o.Name + "-seed", Seed: true, Cluster: o.Name, User: o.User, Password: o.Password})
	if err != nil {
		return nil, err
	}
	c.seed = seed
	for i := range o.Nodes {
		n, err := Start(c.nodeOptions(i))
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.nodes[i] = n
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// nodeOptions are node i's options: its name and store never change, and
// it routes to every node running now.
func (c *Cluster) nodeOptions(i int) Options {
	name := fmt.Sprintf("%s-%d", c.opts.Name, i+1)
	o := Options{Name: name, StoreDir: filepath.Join(c.opts.Dir, name), Cluster: c.opts.Name,
		User: c.opts.User, Password: c.opts.Password, MaxStore: c.opts.MaxStore}
	if c.seed.Running() {
		o.Routes = append(o.Routes, c.seed.ClusterURL())
	}
	for j, n := range c.nodes {
		if j != i && n != nil && n.Running() {
			o.Routes = append(o.Routes, n.ClusterURL())
		}
	}
	return o
}

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Len returns how many nodes the cluster has, running or not.
func (c *Cluster) Len() int { return len(c.nodes) }

// URLs returns the client URLs of the running nodes, comma-separated, as
// --nats takes them.
func (c *Cluster) URLs() string {
	var urls []string
	for _, n := range c.nodes {
		if n != nil && n.Running() {
			urls = append(urls, n.URL())
		}
	}
	return strings.Join(urls, ",")
}

// Kill stops node i at once: its clients' connections drop and the
// consumers it held are gone. As every NATS server does when it stops,
// it first hands the leadership of its Raft groups to its peers, so the
// streams it led have new leaders within a few heartbeats rather than an
// election timeout. Its store stays for Restart.
func (c *Cluster) Kill(i int) { c.nodes[i].Stop() }

// Restart starts node i again with its name and store, routed to the
// nodes running now, and waits until it is current with its peers, or
// ctx ends. Its client port is a new one.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	n, err := Start(c.nodeOptions(i))
	if err != nil {
		return err
	}
	c.nodes[i] = n
	return c.WaitReady(ctx)
}

// WaitReady waits until every running node is routed to the others, a
// JetStream meta leader knows every node of the cluster, and every
// running node is current with it.
func (c *Cluster) WaitReady(ctx context.Context) error {
	running := c.running()
	peers := len(running) - 1
	if c.seed.Running() {
		peers++
	}
	err := waitFor(ctx, "the NATS cluster's routes", func() bool {
		for _, n := range running {
			if n.srv.NumRoutes() < peers {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	err = waitFor(ctx, "a JetStream meta leader that knows every node", func() bool {
		for _, n := range running {
			if n.srv.JetStreamIsLeader() {
				return len(n.srv.JetStreamClusterPeers()) == len(c.nodes)
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	return waitFor(ctx, "every NATS node to be current", func() bool {
		for _, n := range running {
			if !n.srv.JetStreamIsCurrent() {
				return false
			}
		}
		return true
	})
}

// Leader returns the index of the node that leads stream in the global
// account, or -1 when none does now.
func (c *Cluster) Leader(stream string) int {
	for i, n := range c.nodes {
		if n.Running() && n.srv.JetStreamIsStreamLeader("$G", stream) {
			return i
		}
	}
	return -1
}

// WaitLeader waits until a running node leads stream in the global
// account, and returns its index, or ctx's error. A stream's leader may
// change at any time (a leader slowed past its peers' election timeout
// loses its place), so a test that needs one asks for it at the moment
// it acts on it, rather than taking a -1 from Leader for "there is
// none".
func (c *Cluster) WaitLeader(ctx context.Context, stream string) (int, error) {
	leader := -1
	err := waitFor(ctx, "a NATS node to lead the stream "+stream, func() bool {
		leader = c.Leader(stream)
		return leader >= 0
	})
	return leader, err
}

// running returns the nodes that run now.
func (c *Cluster) running() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n != nil && n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Stop stops every node that runs, and the seed.
func (c *Cluster) Stop() {
	for _, n := range append(c.nodes, c.seed) {
		if n != nil && n.Running() {
			n.Stop()
		}
	}
}

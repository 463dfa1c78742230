// Package natsnode runs NATS servers with JetStream inside this process:
// one node on loopback for a single machine's operator plane, or a
// cluster of nodes for tests and for the fleet benchmark (bench fleet).
//
// Every node listens on loopback only, on ports the system picks (port
// 0, read back from the running server: no port is ever guessed or
// reused), and keeps its JetStream store in a directory of its own. A
// cluster is formed from seeds: the first node starts alone, every later
// one routes to those already running, and route gossip completes the
// mesh. A node that is killed and started again keeps its name and its
// store, so it rejoins its Raft groups and catches up.
//
// Waiting for a cluster is waiting on conditions the servers report
// (routes, a JetStream meta leader, every peer current), each bounded by
// the caller's context; nothing here sleeps for a guessed while.
//
// It sits beside the operator plane (package plane and its JetStream
// implementation, natsplane), which connects to the nodes as an ordinary
// NATS client; nothing of the plane depends on the nodes being in this
// process.
package natsnode

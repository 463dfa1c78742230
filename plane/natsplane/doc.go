// Package natsplane is the operator plane on NATS JetStream: a
// plane.Member that any number of bridges and gateways on any number of
// machines join, each a front door with the same open questions and
// history, none a single point of failure.
//
// What the cluster holds, under a prefix (--nats-prefix, so fleets share
// a cluster), each replicated (3 copies on a cluster):
//
//	P_events    stream, subject P.ev.<session>  every session's events, a
//	            session's replay depth per subject, bounded in bytes
//	P_open      bucket, <key>.<question>        the open questions
//	P_sessions  bucket, <session>               the claimed sessions
//	P_commands  bucket, <key>.<command>         the commands' recorded acks
//	P_members   bucket, <key>                   the members' heartbeats
//	P_identities bucket, doc and seen.<name>    the named operators and
//	            clients, sealed, and when each was last used
//	P_notified  bucket, <MAC of a notification> which door sends it
//	P.cmd.<key>         core subject            commands to a member, sealed
//	P.redeliver.<sess>  core subject            re-sent acks, live only
//
// <key> is the fingerprint of a member's session key, <session> a digest
// of a session's source and id.
//
// A member's own sessions write to its Sink: the event reaches its hub
// at once, and a bounded outbox that one goroutine sends in order, each
// operation retried until the cluster takes it, so a session never waits
// on the cluster and its events reach the stream in seq order, with its
// open questions' entries after the events that ask and settle them.
// Everything is signed with the member's session key at the moment it
// is sent.
//
// A member's hub is its front door: on Open it reads the heartbeats, the
// claimed sessions, the whole events stream and the open questions, and
// then keeps reading them, putting every other member's events in the
// hub as that member's writing (bus.Hub.IngestFrom, the writer named by
// its key), so the hub's own rules hold: a question's lifecycle only
// from its owner, the open-question budget per writer, bounded replay. A
// member whose heartbeats stop (or that says it leaves) is gone: its
// questions follow the abandoned rule of a joined bridge whose link is
// down (bus.Hub.Left, dated questions kept until their expiry and
// bus.ExpiredGrace), and its sessions leave the roster. An open
// question's entry names where the stream stored its event, and a door
// that reads the entry first opens the question once the stream brought
// it there (or at once if the stream no longer holds it), so every door
// lists a session's events in their order.
//
// # When a server goes
//
// Streams and buckets have three replicas, so a cluster that loses a
// node keeps every event and entry; what a member must recover is its
// own part, which lives on single servers:
//   - Its connection: the client reconnects to another node within
//     ReconnectWait; a server that stops answering without closing the
//     connection is found by pings (three heartbeats of silence).
//   - Its requests in flight (a publish, a bucket put, a consumer being
//     made): a reply that was on its way through the server that went
//     never comes, and a stream electing a leader drops what it is sent.
//     Every request is bounded (2s, doubling to 5s, while the cluster is
//     slow) and ends at once when the connection drops, then is sent
//     again: the events stream deduplicates by event, the bucket
//     operations are idempotent.
//   - Its readers: the member reads the events stream and each bucket
//     through consumers of its own (one replica, in memory, on one server
//     of the stream's), and a consumer is gone with its server. A reader
//     makes a new one, starting after the last message it handed over,
//     when its connection drops, when two of the consumer's idle
//     heartbeats are missed (half a member heartbeat, 1s at least), or
//     when a delivery is out of order: nothing is read twice or skipped.
//     (The client library's own ordered consumers and key watchers
//     recover too, but after their fixed heartbeats and request timeouts:
//     10 to 30 seconds, long enough for every other member to be taken
//     for gone.)
//   - Who is alive: a member reads its own heartbeats back from the
//     bucket with the others', and judges silence by them, in the
//     cluster's time: while they do not come back (its connection, the
//     bucket's leader or its consumer is away), it takes nobody for gone.
//
// With the node a front door is connected to, and that leads the events
// stream, stopped, a question asked and answered across doors goes
// through within a few seconds (TestKillTheNodeThatLeadsTheStream).
//
// What an emitter connected to a front door writes (a bridge joined with
// --relay, any AEP emitter on /socket or POST /events) reaches the plane
// too: the door that holds the connection, having checked its authority,
// states each event it admitted on the events stream, and each session
// the emitter claims in P_sessions, as relayed statements, signed with
// its key and MAC'd with a key derived from the fleet's token (relay.go).
// Every other door puts those events in its hub as that door's emitter's
// writing, applies the abandoned rule when the door says the emitter
// left (or the door is gone), and routes a command for such a session to
// the door, which hands it to the emitter's connection.
//
// Every front door authenticates the same named operators and clients:
// the identity document lives in P_identities, sealed with a key derived
// from the fleet's token (the cluster's credentials neither read its
// verifiers nor write a record), each version above the last, so a door
// that read a revocation refuses the document from before it put back
// (identities.go). The CLI changes it through an IdentityStore, compare
// and set; every member follows it, and hands each change to its front
// door's IdentitySource, which closes a revoked operator's connections.
//
// What a front door refuses, whatever the cluster's credentials let its
// writer do: a statement not signed by the key its session is certified
// to, or signed for another place or plane; an open question stored long
// after it was signed (Options.MaxSkew: a replayed capture) or already
// settled; a deleted entry as a settle. What an owner refuses: a command
// not sealed with the fleet's key, sent too long ago, or from a principal
// without the answer right. See package plane for the rules.
package natsplane

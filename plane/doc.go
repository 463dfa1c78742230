// Package plane is the operator plane's contract: what a bridge or
// gateway process needs of the state operators act on (every session's
// events and history, the open questions, who takes which session's
// commands, the commands' recorded acks), whichever machine holds it.
//
// A process joins the plane as a Member. Each member is a front door: its
// Hub serves the inbox, /socket, /stream and the CLI with every member's
// open questions and history; its Sink takes its own sessions' events;
// Claim makes it the route of its sessions' commands; and Command routes
// an operator's command, which this door authenticated, to the session's
// owner wherever it runs, whose one ack decision reaches every door's
// subscribers as an event.
//
// # Two implementations, one contract
//
// Local is the plane of one process: one bus.Hub that every member
// shares, commands routed in the process. It needs no service and is the
// default. Package natsplane keeps the plane on NATS JetStream (a stream
// of events, key-value buckets of open questions, claimed sessions,
// recorded acks and heartbeats, replicated by the cluster), so that any
// number of processes on any number of machines are front doors of the
// same state and no process is a single point of failure. Both pass one
// contract test suite (package planetest), run against each.
//
// Why not one implementation, an embedded NATS server on one machine
// too: it was measured (a NATS v2.15.3 server with JetStream embedded,
// its stream and buckets made: ready in 30-130 ms, idle at 19.5 MB RSS
// for the whole process, against 15.6 MB for today's bridge), and it
// fits the limits (a second, 40 MB). What decides against it is what it
// would buy: on one machine an embedded server is the same single point
// of failure as the process that embeds it, several bridges on one
// machine cannot share one JetStream store (so today's join of the hub on
// the port stays either way), every event would take a round trip
// through a server before a subscriber sees it, and every test that
// starts a bridge would start a JetStream server. The fleet gets the
// JetStream plane with --nats; the single machine keeps the hub, and the
// contract suite keeps the two the same.
//
// # Authority does not trust the bus
//
// The rules that hold on one hub hold on the plane, and they are checked
// by the front doors and by the session's owner, never by trusting what
// the cluster carries: the cluster's credentials carry the plane and are
// never an operator's credentials.
//   - Who may write a session: its id is certified to its bridge's
//     session key (proof.Key.SessionID), and everything a member states
//     is signed with that key (proof.Key.Sign); a front door believes an
//     event, an open question or a claim only when the key its session is
//     certified to signed it, for this plane and this place.
//   - Owner-only lifecycle: a question leaves a door's open set only by
//     its owner's signed settle (attention.resolved, .timeout, or
//     session.ended); a deleted bucket entry settles nothing.
//   - Commands come only through a front door: it authenticates the
//     operator, and its Principal travels with the command, sealed with
//     a key derived from the fleet's token (AES-256-GCM), to the member
//     named by the session's key, which checks it again and hands it to
//     the session's control intake. Only the owner's sealed reply is
//     believed, so nobody who only holds the cluster's credentials can
//     read an answer, make a command the owner takes, or answer for it.
//   - One reply per command: the intake's one ack decision, recorded on
//     the plane under (source, id), so a command sent again through any
//     door gets the same ack, byte for byte.
//   - Capture gating happens before anything leaves the process: the
//     sink takes events the emitter already down-leveled; only commands
//     carry real answers, and they travel sealed.
//
// It sits where the hub sits in the flow: the last stage out (elicit →
// translate → attention → bus → plane) and the first back (plane →
// control → attention → translate → elicit).
package plane

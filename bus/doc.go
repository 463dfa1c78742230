// Package bus carries the bridge's events inside the process: the session
// emitter that stamps each event with its identity and (epoch, seq)
// position, the per-session JSONL log that makes history durable, and the
// hub that fans events out to subscribers. The hub keeps two things apart:
// the open questions of every session it serves, which are state (held
// whole until their owner settles them, and the start of every
// subscription), and replay, which is history, bounded in events and bytes.
//
// The log writes each line whole or not at all, counts the events it could
// not write (a full disk) and records them as a gap (an agent.health
// record with a log_gap member) when it can write again; ReadLog is how
// every reader of the logs reads them, skipping a torn line (a crash
// mid-write) with a warning that names the file and line.
//
// It is the last stage of the outbound flow (elicit → translate → attention
// → bus) and the first of the return flow (bus → control → attention →
// translate → elicit); it imports neither control nor attention, which reach
// it through small interfaces. The network surfaces built on it live in
// endpoint (the AEP server) and relay (the outbound link).
//
// Spec sections: AEP-0001 §5.2 and §7 (session scoping, epoch/seq), §8.2
// (capture ceilings, enforced here as a last line before anything leaves the
// process), AEP-0002 §5 (agent.health, the gap record's type) and §7 (the
// attention lifecycle, which only a question's owner advances), AEP-0003
// §3.1 (JSONL), §5 (replay buffers) and §8.4 (backpressure).
package bus

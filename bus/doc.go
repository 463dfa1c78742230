// Package bus carries the bridge's events: the session emitter that stamps
// each event with its identity and (epoch, seq) position, the per-session
// JSONL log that makes history durable, and the in-memory hub that fans
// events out to subscribers.
//
// It is the last stage of the outbound flow (elicit → translate → attention
// → bus) and the first of the return flow (bus → control → attention →
// translate → elicit); it imports neither control nor attention, which reach
// it through small interfaces.
//
// Spec sections: AEP-0001 §5.2 and §7 (session scoping, epoch/seq), §8.2
// (capture ceilings, enforced here as a last line before anything leaves the
// process), AEP-0003 §3.1 (JSONL) and §8.4 (backpressure).
package bus

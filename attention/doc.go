// Package attention owns the attention lifecycle of the bridge: pending
// questions, their lifecycle events, and the form gating core that decides
// what of a question and its answer the bus may see.
//
// The gating core (gate.go) is pure: no I/O and no goroutines. It builds the
// data of attention.requested for a capture ceiling and gates answer values
// type-dependently, so it is table-tested against the AEP conformance
// corpora. Gating shapes what the bus sees, never what the server gets: the
// upstream server always receives the real answer.
//
// Spec sections: AEP-0002 §5.3 (the [metadata*] exceptions and the
// type-dependent values rule) and §7 (the lifecycle), AEP-0003 §9.2 and §9.4,
// AEP-0006.
package attention

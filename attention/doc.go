// Package attention owns the attention lifecycle of the bridge: pending
// questions, their lifecycle events, and the form gating core that decides
// what of a question and its answer the bus may see.
//
// The gating core (gate.go) is pure: no I/O and no goroutines. It builds the
// data of attention.requested for a capture ceiling (structural constraints
// at every level, descriptions and defaults at redacted and above) and gates
// answer values type-dependently, so it is table-tested against the AEP
// conformance corpora. A secret field's value never appears at any level:
// it is the §9.4 secret placeholder, and the Manager tells the control
// intake which keys of a command to scrub before the command is recorded.
// Gating shapes what the bus sees, never what the server gets: the upstream
// server always receives the real answer.
//
// The Manager remembers the questions it settled, so an answer that comes
// after one was settled (it lost the race between the MCP client and the
// operators, or came after the timeout) is recorded as
// x.aep-mcp-bridge.attention.outraced rather than dropped (race.go).
//
// Spec sections: AEP-0001 §6 (vendor types), AEP-0002 §5.3 (the [metadata*] exceptions and the
// type-dependent values rule) and §7 (the lifecycle), AEP-0003 §9.2 and §9.4,
// AEP-0006.
package attention

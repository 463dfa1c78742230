// Package planetest is the contract of the operator plane: one suite of
// tests that every implementation of plane.Member passes, the in-process
// plane (plane.Local) and the one on NATS JetStream (natsplane) alike.
// The sessions it runs are real: a bus emitter writing to the member's
// sink, an attention manager raising questions, and a control intake
// deciding the commands routed to it.
package planetest

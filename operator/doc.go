// Package operator is the client side of the AEP endpoint for people and
// scripts: it lists pending questions, answers one with
// control.attention.respond and waits for the ack, and tails the event
// stream. The binary's pending, respond and tail subcommands are thin
// wrappers around it.
//
// It is a control sender in the sense of AEP-0004 §7: it reuses a
// command's id on every retry, treats silence past the ack window as a
// timeout, and learns outcomes only from events.
package operator

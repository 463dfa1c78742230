// Package control is the command intake of a session: it authenticates the
// sender's binding, deduplicates commands on (source, id), makes exactly one
// ack decision per command and hands control.attention.respond to the
// attention lifecycle, with who sent it as the binding authenticated them
// (Sender.By: a named operator, or the token's holder), never as the
// command claims; an operator that may only read is refused
// control.rejected{unauthorized}, recorded in the history. The session history records each command with its
// secret answer values replaced by the §9.4 placeholder (Target.SecretKeys),
// and each rejection detail as the target built it: from structural parts
// only, never passed through redaction.
//
// It sits on the return flow (bus → control → attention → translate →
// elicit) and is transport-agnostic: the WebSocket endpoint, the relay link
// and in-process operators all submit through Intake.
//
// Spec sections: AEP-0004 §2 (commands, idempotency), §3 (one ack decision,
// byte-identical re-ack on redelivery), §4.1 (control only on authenticated
// bindings), §4.2 (declared accepts), §5 (control.attention.respond).
package control

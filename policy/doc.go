// Package policy decides which MCP tool calls need people: a policy file's
// ordered rules match a call's server, tool, client and arguments and
// decide allow, deny (with a reason the model reads) or ask (who must
// approve, how many, for how long).
//
// Where it sits: elicit intercepts tools/call and asks the Policy for a
// Decision before anything is forwarded. Allow forwards the call's bytes
// untouched; Deny answers the client with a tool result carrying the
// reason, and the server never sees the call; Ask holds the call, and
// elicit raises attention.requested(kind:"permission") through attention,
// as it raises a form. Operators' answers come back through control, which
// names the authenticated operator (an Actor), and each becomes a Vote on
// the call's Hold. A vote the Hold refuses is nacked with the Refusal's
// NackReason ("unauthorized" for an operator who is not an approver).
// When the Hold is Allowed, its Grant releases the call; an allow-session
// Grant goes into the session's Memory, which lets later calls with the
// same arguments under the same unchanged rule pass without asking.
// tool.requested, tool.denied and the permission question's lifecycle
// carry the Decision's Rule and Revision and the call's ArgsDigest.
//
// The package is pure: no I/O and no goroutines. Parse reads bytes handed
// to it; a Hold is driven by the time its owner passes in; the Reloader
// keeps the last good policy when new bytes do not load. So every part is
// tested by table or message script, without a clock or a network. The
// file itself (loading at start, reloading on change and on SIGHUP) is
// package policyfile's.
//
// Fail-safe rules, in one place:
//   - a document with any problem does not load at all (*ParseError lists
//     every problem with its line, rule and field);
//   - a condition that cannot be evaluated never makes a decision less
//     cautious than either answer it could have given (Policy.Decide);
//   - arguments that are not a readable JSON object (malformed, a
//     duplicate key, invalid UTF-8, too deep) make every condition fail
//     that reads them;
//   - a held call is denied on its timeout unless its rule says
//     on_timeout: allow;
//   - an approval covers only the call it was given for: its session,
//     rule, policy revision, arguments digest, and an expiry (Grant).
//
// Conditions are CEL (cel.dev/cel-go) over args (the call's arguments),
// server, tool and client, bounded in size (MaxConditionLen) and in the
// cost of one evaluation (MaxConditionCost).
package policy

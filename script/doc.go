// Package script answers questions from a file of rules, so a server's
// elicitation can be tested in CI with no human and with the same bridge its
// users run. The first rule whose match fits a question answers it with one
// outcome: values (merged over the schema's defaults), the schema's
// defaults, decline, cancel, or timeout (nothing: the question is left to
// time out). A scripted answer passes exactly the validation an operator's
// does; a rule that does not satisfy the schema is a configuration error
// that names the rule, the field and the violated rule.
//
// Numbers in rules are read exactly (json.Number) and validated like an
// operator's. FromLogs replays recorded answers and lists as incomplete the
// fields a log cannot give back: secret fields, redacted text, and free text
// below redacted; it never prints a placeholder as a value.
//
// It is pure: Load parses and validates a file's bytes, Rules.Answer
// decides. The attention manager applies the decision and records it on the
// bus as answered by "policy:<rule name>".
package script

// Package translate converts between MCP elicitation and the AEP form
// language: a requestedSchema becomes a list of field_spec, an operator's
// answer is validated against the full original schema, and the outcome
// becomes an ElicitResult with typed content.
//
// It sits between elicit (JSON-RPC interception) and attention (the
// lifecycle) on the way out, and between control and elicit on the way
// back. It is pure: no I/O, no goroutines.
//
// The form is a projection; the original schema is the contract. Parse keeps
// every constraint of the schema (lengths, formats, patterns, bounds,
// integer-ness, item counts) so Validate can enforce them, and FieldSpecs
// carries them to operators as field_spec extension members, in the order the
// schema declares its properties. A construct the form language cannot
// express (a nested object, an array of objects, a $ref, an unknown type) is
// refused whole with an *UnsupportedError naming the property, never
// half-rendered.
//
// Numbers are exact (number.go): answers and bounds are compared as exact
// rationals, never through a float64; an integer field sends the canonical
// digits of the answer's value and a number field the number as written. A
// field is secret (Field.Secret) when its schema says so (format "password",
// writeOnly) or its key or title names a credential; the attention gating
// core keeps secret values off the bus, while the server gets them.
//
// Validation is written here rather than delegated to a general JSON Schema
// validator: Parse admits only MCP's closed, flat subset, and each violation
// becomes one InvalidAnswer (field, keyword, a reason with the bound) in
// field order, worded for operators and never quoting the answer. String
// formats are checked exactly as ajv-formats checks them in the TypeScript
// SDK, the strictest SDK that checks answers (format.go), so the bridge
// never accepts an answer the server would refuse.
//
// Spec sections: MCP 2025-06-18 and 2025-11-25 client/elicitation (form
// mode; URL mode results carry no content); JSON Schema 2020-12 validation
// §6.2 (numeric keywords, integers as numbers with a zero fractional part);
// RFC 8259 §6 (numbers, the interoperable double range); AEP-0002 §5.2
// field_spec and §5.3 attention.answered values (the MUST-reject rule);
// AEP-0006; AEP-0008 (text answers).
package translate

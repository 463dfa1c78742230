// Package fieldinput is what an operator's terminal needs to answer one
// field of a form question (an AEP-0002 §5.2 field_spec): a description
// of the field (type, constraints, choices, default), a reader that turns
// a typed line into the field's value, and the bridge's own checks of
// that value (package translate), so what the terminal says about an
// answer is what the bridge would say.
//
// It does no I/O; `aep-mcp-bridge respond` asks field by field with it.
package fieldinput

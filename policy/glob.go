package policy

import "github.com/agenteventprotocol/aep-mcp-bridge/internal/glob"

// MaxGlobLen bounds the length of one glob in bytes.
const MaxGlobLen = glob.MaxLen

// globs is a field's patterns: a name matches when any pattern does, and
// an empty list (the field was not written) matches every name. The
// syntax is package glob's, which operators' scopes share.
type globs = glob.List

// compileGlob compiles a pattern, or says what is wrong with it.
func compileGlob(src string) (*glob.Glob, error) { return glob.Compile(src) }

// Package jsonc parses JSON and JSON with comments (JSONC: // and /* */
// comments, trailing commas), as MCP clients' config files are written,
// into a tree that records each value's byte span.
//
// It exists for editors that change one value of a file and must leave
// every other byte as it was: comments, formatting, key order and unknown
// keys. A caller splices new text into the spans it wants to change and
// keeps the rest of the source. The parser reads untrusted files: nesting
// is bounded (MaxDepth) and every error names the line and column.
//
// It does no I/O. Package clientconfig is its user.
package jsonc

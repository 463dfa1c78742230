// Package clientconfig rewrites MCP clients' config files so that every
// server runs through aep-mcp-bridge (Wrap), and back (Unwrap).
//
// It knows the shapes the clients write: mcpServers at the top (Claude
// Code's .mcp.json and ~/.claude.json, Claude Desktop, Cursor),
// projects.<path>.mcpServers (~/.claude.json's per-project servers),
// servers at the top (VS Code's .vscode/mcp.json) and mcp.servers (its
// user settings.json). Files are JSON or JSONC (package jsonc), and only
// the server entries change: comments, formatting, key order and unknown
// keys stay byte for byte. What is inserted reads like the rest of the
// file, so Unwrap can take it out again exactly; with the backup Wrap's
// caller keeps (WriteFile), Unwrap gives back the original entry byte for
// byte.
//
// A stdio entry `command args...` becomes `aep-mcp-bridge --name KEY --
// command args...`; a URL entry becomes `aep-mcp-bridge --name KEY --url
// URL`, its headers moved to the entry's environment (HeaderEnvPrefix),
// where a process's credentials are private to its user.
//
// Wrap and Unwrap do no I/O; WriteFile replaces a file atomically.
package clientconfig

package jsonrpc

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// JSON-RPC error codes the bridge answers with: mcp-go's, and one it does
// not export.
const (
	CodeParseError     = mcp.PARSE_ERROR
	CodeInvalidRequest = mcp.INVALID_REQUEST
	CodeMethodNotFound = mcp.METHOD_NOT_FOUND
	CodeInvalidParams  = mcp.INVALID_PARAMS
	CodeInternal       = mcp.INTERNAL_ERROR
	// CodeConnectionClosed is the code MCP SDKs use for a peer that went
	// away, or a transport that could not carry a request, with requests in
	// flight (the TypeScript SDK's ConnectionClosed). JSON-RPC 2.0 §5.1
	// leaves -32000 to -32099 to implementations, and mcp-go v1.2.1 exports
	// no constant for it.
	CodeConnectionClosed = -32000
)

// IDKey is a map key for a JSON-RPC id: its compact JSON text, so 1 and "1"
// stay distinct as JSON-RPC requires, and ids that differ only in white
// space are one key.
func IDKey(id json.RawMessage) string {
	if isCompact(id) {
		return string(id)
	}
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// isCompact reports whether id is a JSON scalar with no white space to
// remove: a string without spaces outside it, a number, true/false/null.
// Most ids are, and they skip json.Compact.
func isCompact(id []byte) bool {
	if len(id) == 0 {
		return true
	}
	switch id[0] {
	case '"':
		return id[len(id)-1] == '"' && bytes.IndexByte(id[1:len(id)-1], '"') < 0
	case '{', '[':
		return false
	}
	for _, c := range id {
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			return false
		}
	}
	return true
}

// HasID reports whether id names a request: present and not null.
func HasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

// ErrorResponse encodes a JSON-RPC error response. id nil or empty means
// null: use it only when no id can be read (JSON-RPC 2.0 §5).
func ErrorResponse(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 || !json.Valid(id) {
		id = json.RawMessage("null")
	} else {
		id = json.RawMessage(IDKey(id))
	}
	m, _ := json.Marshal(msg) // a string always encodes
	b := make([]byte, 0, 64+len(id)+len(m))
	b = append(b, `{"jsonrpc":"`+mcp.JSONRPC_VERSION+`","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = append(b, m...)
	return append(b, "}}"...)
}

// Frame is one JSON-RPC message (or batch) as it crosses a connection,
// without its framing (the newline of stdio, the body of an HTTP POST).
type Frame struct {
	// Head is the message: all of it when Rest is nil, otherwise its
	// first bytes.
	Head []byte
	// Rest, when set, is the remainder of a message too large to hold
	// whole, relayed as a stream, to io.EOF at the message's end. A Frame
	// read must have its Rest read to its end (or the connection closed)
	// before the next is read; a Frame written has its Rest read to its
	// end by the write.
	Rest io.Reader
	// Related, on a Frame read from a server, is the id of the client
	// request on whose response stream the message came (MCP
	// basic/transports: such a message relates to that request), or nil
	// when it came on none.
	Related json.RawMessage
	// More, on a Frame read, reports that the next message is already
	// buffered: the read returns it without waiting. On a Frame written,
	// it lets the connection hold the message back to send it with the
	// ones that follow, as MSG_MORE does: the next write without More
	// sends all it holds. A written Frame with no bytes (no Head, no Rest)
	// writes nothing of its own and sends what the connection holds.
	More bool
	// Limit, on a Frame read with Rest set, is the size up to which the
	// connection reads a message whole, for the error a refused message
	// gets; 0 means the stdio framing's 4 MiB.
	Limit int
}

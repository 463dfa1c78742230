package elicit

import (
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// message is the JSON-RPC envelope the proxy reads. Params, Result and
// Error stay raw: the proxy forwards bytes, never re-encoded messages.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (m *message) hasID() bool { return jsonrpc.HasID(m.ID) }

func (m *message) isRequest() bool { return m.Method != "" && m.hasID() }

func (m *message) isNotification() bool { return m.Method != "" && !m.hasID() }

func (m *message) isResponse() bool { return m.Method == "" && (m.hasID() || m.Error != nil) }

// idKey is a map key for a JSON-RPC id: its compact JSON text, so 1 and
// "1" stay distinct as JSON-RPC requires.
func idKey(id json.RawMessage) string { return jsonrpc.IDKey(id) }

// JSON-RPC error codes, shared with the remote transports.
const (
	codeParseError       = jsonrpc.CodeParseError
	codeInvalidRequest   = jsonrpc.CodeInvalidRequest
	codeMethodNotFound   = jsonrpc.CodeMethodNotFound
	codeInvalidParams    = jsonrpc.CodeInvalidParams
	codeInternal         = jsonrpc.CodeInternal
	codeConnectionClosed = jsonrpc.CodeConnectionClosed
	// codeURLElicitationRequired is MCP's URLElicitationRequiredError
	// (2025-11-25).
	codeURLElicitationRequired = mcp.URL_ELICITATION_REQUIRED
)

// errorResponse encodes a JSON-RPC error response. id may be nil (null).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	return jsonrpc.ErrorResponse(id, code, msg)
}

// resultResponse encodes a JSON-RPC result response.
func resultResponse(id json.RawMessage, result any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{mcp.JSONRPC_VERSION, id, result})
}

// notification encodes a JSON-RPC notification.
func notification(method mcp.MCPMethod, params any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{mcp.JSONRPC_VERSION, string(method), params})
}

// setPath sets a member deep inside a JSON object, creating objects on the
// way; only the objects on the path are re-encoded.
func setPath(raw []byte, v any, path ...string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("not an object")
	}
	if len(path) == 1 {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj[path[0]] = b
		return json.Marshal(obj)
	}
	inner := obj[path[0]]
	if len(inner) == 0 || string(inner) == "null" {
		inner = json.RawMessage("{}")
	}
	b, err := setPath(inner, v, path[1:]...)
	if err != nil {
		return nil, err
	}
	obj[path[0]] = b
	return json.Marshal(obj)
}

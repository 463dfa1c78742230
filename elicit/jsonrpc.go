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
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
	// Meta is params._meta, when the parse read it.
	Meta json.RawMessage
	// related is, for a server message, the id of the client request on
	// whose response stream it came (Frame.Related), or nil.
	related json.RawMessage
	// k is the id key, once key computed it.
	k string
}

// wholeScan reads a whole message's envelope, its values slices of the
// message itself.
var wholeScan = jsonrpc.ScanOptions{Alias: true, Capture: map[string]int{"params._meta": 0}}

// parse reads a whole message (one, not a batch) into m in one pass of the
// jsonrpc Scanner, with no copy: m's members are slices of raw, which must
// outlive m. It fails for what is not JSON (nested deeper than
// maxParseDepth included) and for what is not a JSON-RPC message object.
func (m *message) parse(raw []byte) error {
	if !json.Valid(raw) {
		return errNotJSON
	}
	env, err := jsonrpc.Scan(raw, wholeScan)
	if err != nil {
		return err
	}
	if env.Batch {
		return errors.New("a batch inside a batch")
	}
	if mv := env.MethodAt.Of(raw); mv != nil && mv[0] != '"' && string(mv) != "null" {
		return errors.New("its method is not a string")
	}
	*m = message{ID: env.IDAt.Of(raw), Method: env.Method, Params: env.ParamsAt.Of(raw),
		Result: env.ResultAt.Of(raw), Error: env.ErrorAt.Of(raw), Meta: env.Members["params._meta"]}
	return nil
}

// errNotJSON is parse's error for bytes that are not JSON.
var errNotJSON = errors.New("not valid JSON")

func (m *message) hasID() bool { return jsonrpc.HasID(m.ID) }

// key returns the id key of the message's id, computed once for the
// several tables a message is looked up in.
func (m *message) key() string {
	if m.k == "" && len(m.ID) > 0 {
		m.k = idKey(m.ID)
	}
	return m.k
}

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

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
	// Meta is params._meta and ReqState params.requestState, when the
	// parse read them; ResultType and ResultMeta are result.resultType
	// and result._meta.
	Meta, ReqState         json.RawMessage
	ResultType, ResultMeta json.RawMessage
	// related is, for a server message, the id of the client request on
	// whose response stream it came (Frame.Related), or nil.
	related json.RawMessage
	// k is the id key, once key computed it.
	k string
}

// wholeScan reads a whole message's envelope, its values slices of the
// message itself; parse uses it to word the error for a message that is
// JSON but not an object.
var wholeScan = jsonrpc.ScanOptions{Alias: true}

// parse reads a whole message (one, not a batch) into m in one pass that
// also checks it is JSON (jsonrpc.ReadWhole), with no copy: m's members are
// slices of raw, which must outlive m. It fails for what is not JSON
// (nested deeper than maxParseDepth included) and for what is not a
// JSON-RPC message object.
func (m *message) parse(raw []byte) error {
	var env jsonrpc.Whole
	object, valid := jsonrpc.ReadWhole(raw, &wholeMembers, &env)
	if !valid {
		return errNotJSON
	}
	if !object {
		e, err := jsonrpc.Scan(raw, wholeScan)
		if err != nil {
			return err
		}
		if e.Batch {
			return errors.New("a batch inside a batch")
		}
		return errors.New("not an object") // Scan refuses every other value
	}
	if mv := env.Method; mv != nil && mv[0] != '"' && string(mv) != "null" {
		return errors.New("its method is not a string")
	}
	*m = message{ID: env.ID, Method: methodName(env.Method), Params: env.Params,
		Result: env.Result, Error: env.Error, Meta: env.InParams[0], ReqState: env.InParams[1],
		ResultType: env.InResult[0], ResultMeta: env.InResult[1]}
	return nil
}

// wholeMembers are the members of params and result the proxy decides
// by, in the order parse reads them from jsonrpc.Whole.
var wholeMembers = jsonrpc.WholeOptions{
	Params: []string{"_meta", "requestState"},
	Result: []string{"resultType", "_meta"},
}

// methodName is the method a JSON string names, without allocating for
// the methods MCP defines.
func methodName(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if m, ok := knownMethods[string(v[1:len(v)-1])]; ok {
		return m
	}
	return jsonrpc.DecodeString(v)
}

// knownMethods interns the method names of MCP's requests and
// notifications.
var knownMethods = func() map[string]string {
	m := map[string]string{}
	for _, name := range []mcp.MCPMethod{
		mcp.MethodInitialize, mcp.MethodPing, mcp.MethodToolsList, mcp.MethodToolsCall,
		mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList, mcp.MethodResourcesRead,
		mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe,
		mcp.MethodPromptsList, mcp.MethodPromptsGet, mcp.MethodCompletionComplete,
		mcp.MethodSetLogLevel, mcp.MethodElicitationCreate, mcp.MethodSamplingCreateMessage,
		mcp.MethodListRoots, mcp.MethodTasksGet, mcp.MethodTasksList, mcp.MethodTasksResult,
		mcp.MethodTasksCancel, mcp.MethodServerDiscover, mcp.MethodSubscriptionsListen,
		mcp.MethodNotificationCancelled, mcp.MethodNotificationProgress,
		mcp.MethodNotificationMessage, mcp.MethodNotificationInitialized,
		mcp.MethodNotificationElicitationComplete, mcp.MethodNotificationResourcesListChanged,
		mcp.MethodNotificationResourceUpdated, mcp.MethodNotificationPromptsListChanged,
		mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationRootsListChanged,
		mcp.MethodNotificationTasksStatus, mcp.MethodNotificationSubscriptionsAcknowledged,
	} {
		m[string(name)] = string(name)
	}
	return m
}()

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

package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// envelope is what the gateway reads of a JSON-RPC message: enough to
// route it, never its content.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta struct {
			ProgressToken   json.RawMessage `json:"progressToken"`
			ProtocolVersion string          `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
		// ProgressToken is the token a notifications/progress names.
		ProgressToken json.RawMessage `json:"progressToken"`
		// RequestID is the request a notifications/cancelled names.
		RequestID json.RawMessage `json:"requestId"`
		// RequestState is what a 2026-07-28 retry echoes (MRTR).
		RequestState *string `json:"requestState"`
	} `json:"params"`
	Result *struct {
		ResultType      string `json:"resultType"`
		RequestState    string `json:"requestState"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

func (e *envelope) hasID() bool { return len(e.ID) > 0 && string(e.ID) != "null" }

func (e *envelope) isRequest() bool { return e.Method != "" && e.hasID() }

func (e *envelope) isResponse() bool {
	return e.Method == "" && e.hasID() && (e.Result != nil || len(e.Error) > 0)
}

// progressToken returns the request's progress token, or nil.
func (e *envelope) progressToken() json.RawMessage {
	t := e.Params.Meta.ProgressToken
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	return t
}

// idKey is a JSON-RPC id (or progress token) as a map key: its compact
// JSON text, so 1 and "1" stay apart.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// split returns the messages of body: the elements of a batch, or body
// itself. ok is false for a body that is not JSON, an empty batch, or a
// batch element that is not an object.
func split(body []byte) (msgs []json.RawMessage, batch, ok bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return nil, false, false
	}
	if t[0] != '[' {
		if t[0] != '{' || !json.Valid(t) {
			return nil, false, false
		}
		return []json.RawMessage{t}, false, true
	}
	if err := json.Unmarshal(t, &msgs); err != nil || len(msgs) == 0 {
		return nil, true, false
	}
	for _, m := range msgs {
		if mt := bytes.TrimSpace(m); len(mt) == 0 || mt[0] != '{' {
			return nil, true, false
		}
	}
	return msgs, true, true
}

// parse reads the envelope of one message; ok is false when it is not a
// JSON-RPC object.
func parse(msg []byte) (envelope, bool) {
	var e envelope
	if err := json.Unmarshal(msg, &e); err != nil {
		// A message whose params or result have an unexpected shape still
		// has an id and a method worth routing by.
		var bare struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(msg, &bare) != nil {
			return envelope{}, false
		}
		e = envelope{ID: bare.ID, Method: bare.Method, Error: bare.Error}
		if len(bare.Result) > 0 {
			e.Result = &struct {
				ResultType      string `json:"resultType"`
				RequestState    string `json:"requestState"`
				ProtocolVersion string `json:"protocolVersion"`
			}{}
		}
	}
	return e, true
}

// rpcError is a JSON-RPC error response; ID is null for an error about a
// message whose id is unknown.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// errorMessage encodes a JSON-RPC error response.
func errorMessage(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: rpcErrorBody{Code: code, Message: msg}})
	return b
}

package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

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
			// SubscriptionID tags a notification of a
			// subscriptions/listen stream (MCP 2026-07-28): that
			// request's id.
			SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
		// ProgressToken is the token a notifications/progress names.
		ProgressToken json.RawMessage `json:"progressToken"`
		// RequestID is the request a notifications/cancelled names.
		RequestID json.RawMessage `json:"requestId"`
		// Name and URI name what tools/call and prompts/get (name), and
		// resources/read (uri) are about.
		Name string `json:"name"`
		URI  string `json:"uri"`
	} `json:"params"`
	Result *struct {
		ResultType      string `json:"resultType"`
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
				ProtocolVersion string `json:"protocolVersion"`
			}{}
		}
	}
	return e, true
}

// subject is what a request is about, as MCP 2026-07-28 names it in the
// Mcp-Name header: the name of tools/call and prompts/get, the uri of
// resources/read, or "".
func (e *envelope) subject() string {
	switch mcp.MCPMethod(e.Method) {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		return e.Params.Name
	case mcp.MethodResourcesRead:
		return e.Params.URI
	}
	return ""
}

// member is one member of a JSON object, its value as written.
type member struct {
	key   string
	value json.RawMessage
}

// errNotObject is objectMembers' error for what is not one JSON object.
var errNotObject = errors.New("not a JSON object")

// objectMembers returns the members of the JSON object obj in order,
// duplicates included, each value as written.
func objectMembers(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, errNotObject
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errNotObject
		}
		ms = append(ms, member{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotObject
	}
	return ms, nil
}

// ambiguousError says that a member the gateway rewrites appears more
// than once, or in another case: JSON parsers disagree on which one
// counts (Go's matches any case and keeps the last; JavaScript's keeps
// the last of the exact name), so the gateway takes none.
type ambiguousError struct{ name string }

func (e *ambiguousError) Error() string {
	return fmt.Sprintf("%q appears more than once, or in another case; send it once, spelled %q", e.name, e.name)
}

// only returns the index of the member named name, -1 when there is
// none, or an *ambiguousError.
func only(ms []member, name string) (int, error) {
	at := -1
	for i, m := range ms {
		if !strings.EqualFold(m.key, name) {
			continue
		}
		if m.key != name || at >= 0 {
			return -1, &ambiguousError{name}
		}
		at = i
	}
	return at, nil
}

// encodeObject writes members as a JSON object, their values as they are.
func encodeObject(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// replaceMember returns msg with the member name of its container
// member (params or result) replaced by what fn makes of its value;
// found is false, and msg returned as it is, when there is no such
// member. Only the two objects on the way are rewritten (their members
// in order, every other value as written). A container or member that
// appears twice or in another case is an *ambiguousError.
func replaceMember(msg []byte, container, name string, fn func(json.RawMessage) (json.RawMessage, error)) (out []byte, found bool, err error) {
	top, err := objectMembers(msg)
	if err != nil {
		return nil, false, err
	}
	ci, err := only(top, container)
	if err != nil || ci < 0 {
		return msg, false, err
	}
	inner, err := objectMembers(top[ci].value)
	if err != nil {
		return msg, false, nil // params or result that is no object holds no member
	}
	ni, err := only(inner, name)
	if err != nil || ni < 0 {
		return msg, false, err
	}
	v, err := fn(inner[ni].value)
	if err != nil {
		return nil, true, err
	}
	inner[ni].value = v
	top[ci].value = encodeObject(inner)
	return encodeObject(top), true, nil
}

// replacePath returns msg with the member at path (object keys, from the
// top) set to what fn makes of its value; found is false, and msg
// returned as it is, when some object on the way or the member is
// missing, or what is on the way is no object. Only the objects on the
// way are rewritten (their members in order, every other value as
// written). A member on the way that appears twice or in another case
// is an *ambiguousError; a msg that is no JSON object is errNotObject.
func replacePath(msg []byte, path []string, fn func(json.RawMessage) (json.RawMessage, error)) (out []byte, found bool, err error) {
	ms, err := objectMembers(msg)
	if err != nil {
		return nil, false, err
	}
	i, err := only(ms, path[0])
	if err != nil || i < 0 {
		return msg, false, err
	}
	var v json.RawMessage
	if len(path) == 1 {
		if v, err = fn(ms[i].value); err != nil {
			return nil, true, err
		}
	} else {
		inner, found, err := replacePath(ms[i].value, path[1:], fn)
		switch {
		case errors.Is(err, errNotObject):
			return msg, false, nil // what is on the way is no object: it holds no member
		case err != nil || !found:
			return msg, found, err
		}
		v = inner
	}
	ms[i].value = v
	return encodeObject(ms), true, nil
}

// setPath is replacePath with a fixed value.
func setPath(msg []byte, v json.RawMessage, path ...string) ([]byte, bool, error) {
	return replacePath(msg, path, func(json.RawMessage) (json.RawMessage, error) { return v, nil })
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

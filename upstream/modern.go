package upstream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// The request metadata of MCP 2026-07-28 streamable HTTP
// (basic/transports/streamable-http, "Request Metadata"): every POST
// carries MCP-Protocol-Version equal to the body's
// _meta["io.modelcontextprotocol/protocolVersion"], Mcp-Method, and for
// tools/call, resources/read and prompts/get Mcp-Name; a tools/call also
// mirrors the arguments its tool's inputSchema marks with x-mcp-header into
// Mcp-Param-{Name} headers. Values that are not plain header-safe ASCII
// travel in the =?base64?…?= sentinel form ("Value Encoding").

// Header names of the 2026-07-28 request metadata. mcp-go exports the
// protocol version header only.
const (
	headerMethod      = "Mcp-Method"
	headerName        = "Mcp-Name"
	headerParamPrefix = "Mcp-Param-"
	base64Open        = "=?base64?"
	base64Close       = "?="
)

// modernVersion is the first revision with per-request metadata.
const modernVersion = mcp.ProtocolVersion20260728

// isModern reports whether a protocol version carries per-request metadata.
func isModern(v string) bool { return v != "" && v >= modernVersion }

// outbound is what the transport reads of a client message: its envelope,
// and for a modern request the fields its headers mirror.
type outbound struct {
	envelope
	// version is the body's _meta protocol version; "" for a message of
	// an earlier revision.
	version string
	// name is params.name (tools/call, prompts/get) or params.uri
	// (resources/read); hasName says the method takes Mcp-Name.
	name    string
	hasName bool
	// args are a tools/call's arguments.
	args json.RawMessage
	// cancels is the requestId of a notifications/cancelled.
	cancels json.RawMessage
}

// parseOutbound reads a client message, in the one pass that checks it
// is JSON (jsonrpc.ReadWhole). A batch or a malformed message yields a
// zero outbound: it is posted as it is. A message whose method, params,
// _meta, name or uri has the wrong type yields its envelope alone.
func parseOutbound(msg []byte) outbound {
	var w jsonrpc.Whole
	if object, valid := jsonrpc.ReadWhole(msg, &outboundMembers, &w); !object || !valid {
		return outbound{}
	}
	o := outbound{envelope: envelope{ID: w.ID, Method: jsonrpc.DecodeString(w.Method)}}
	meta, name, uri := w.InParams[0], w.InParams[1], w.InParams[2]
	if !isKind(w.Method, '"') || !isKind(w.Params, '{') || !isKind(meta, '{') || !isKind(name, '"') || !isKind(uri, '"') {
		return o
	}
	o.args = w.InParams[3]
	if v := jsonrpc.Member(meta, mcp.MetaKeyProtocolVersion); v != nil {
		o.version = jsonrpc.DecodeString(v)
	}
	switch o.Method {
	case string(mcp.MethodToolsCall), string(mcp.MethodPromptsGet):
		o.hasName = name != nil && name[0] == '"'
		o.name = jsonrpc.DecodeString(name)
	case string(mcp.MethodResourcesRead):
		o.hasName = uri != nil && uri[0] == '"'
		o.name = jsonrpc.DecodeString(uri)
	case string(mcp.MethodNotificationCancelled):
		o.cancels = w.InParams[4]
	}
	return o
}

// outboundMembers are the members of params parseOutbound reads.
var outboundMembers = jsonrpc.WholeOptions{Params: []string{"_meta", "name", "uri", "arguments", "requestId"}}

// isKind reports whether the JSON value v is absent, null, or of the kind
// its first byte c says: what encoding/json decodes into a struct, a map
// or a *string without a type error.
func isKind(v []byte, c byte) bool {
	return v == nil || v[0] == c || string(v) == "null"
}

// modernState is what the transport remembers of the 2026-07-28 era.
type modernState struct {
	// mu guards the fields below.
	mu sync.Mutex
	// version is the last modern protocol version a request carried; the
	// version header of a notification that carries none.
	version string
	// bindings are the x-mcp-header annotations of each tool (its own
	// lock guards them; never nil once dialled).
	bindings *ToolHeaders
	// lists holds the ids (compact JSON) of modern tools/list requests in
	// flight, whose results teach bindings.
	lists map[string]bool
	// cancels holds the cancel functions of modern requests in flight, by
	// id: on Streamable HTTP, closing the response stream is the
	// cancellation (basic/transports/streamable-http, "Cancellation").
	cancels map[string]func()
}

// note records a modern request before it is posted: its version, and the
// ids of tools/list requests whose answers carry x-mcp-header bindings.
func (s *modernState) note(o outbound, cancel func()) {
	if !isModern(o.version) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = o.version
	if !o.isRequest() {
		return
	}
	k := jsonrpc.IDKey(o.ID)
	if s.cancels == nil {
		s.cancels = map[string]func(){}
	}
	s.cancels[k] = cancel
	if o.Method == string(mcp.MethodToolsList) {
		if s.lists == nil {
			s.lists = map[string]bool{}
		}
		s.lists[k] = true
	}
}

// done forgets a request once its POST is over.
func (s *modernState) done(id json.RawMessage) {
	if len(id) == 0 {
		return
	}
	s.mu.Lock()
	delete(s.cancels, jsonrpc.IDKey(id))
	s.mu.Unlock()
}

// awaitsList reports whether id is a modern tools/list request in flight,
// whose result inbound must read whole.
func (s *modernState) awaitsList(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lists) > 0 && s.lists[jsonrpc.IDKey(id)]
}

// forgetList forgets a tools/list request whose result inbound will never
// see.
func (s *modernState) forgetList(id json.RawMessage) {
	s.mu.Lock()
	delete(s.lists, jsonrpc.IDKey(id))
	s.mu.Unlock()
}

// cancel closes the response stream of the modern request a client's
// notifications/cancelled names, and reports whether it did: such a
// notification is then not posted, as 2026-07-28 defines none over HTTP.
func (s *modernState) cancel(o outbound) bool {
	if o.Method != string(mcp.MethodNotificationCancelled) || len(o.cancels) == 0 {
		return false
	}
	s.mu.Lock()
	stop, ok := s.cancels[jsonrpc.IDKey(o.cancels)]
	s.mu.Unlock()
	if ok {
		stop()
	}
	return ok
}

// setHeaders adds the request metadata headers to a modern message's
// POST. A message without a version of its own (a notification) carries
// the last modern version, unless an initialize settled an earlier
// revision (legacy): a client that probed with server/discover and fell
// back is not modern.
func (s *modernState) setHeaders(h http.Header, o outbound, legacy string) {
	v := o.version
	s.mu.Lock()
	if v == "" && !o.isRequest() && legacy == "" {
		v = s.version
	}
	s.mu.Unlock()
	var binds []paramBinding
	if o.Method == string(mcp.MethodToolsCall) {
		binds = s.bindings.get(o.name)
	}
	if !isModern(v) {
		return
	}
	h.Set(mcp.HeaderProtocolVersion, v)
	if o.Method != "" {
		h.Set(headerMethod, o.Method)
	}
	if o.hasName {
		h.Set(headerName, headerValue(o.name))
	}
	if o.Method != string(mcp.MethodToolsCall) || len(binds) == 0 || len(o.args) == 0 {
		return
	}
	for _, b := range binds {
		if v, ok := paramValue(o.args, b.path); ok {
			h.Set(headerParamPrefix+b.header, headerValue(v))
		}
	}
}

// inbound learns the x-mcp-header bindings from the result of a modern
// tools/list, and drops from it the tools whose annotations break the
// rules: a Streamable HTTP client MUST exclude them. It returns the
// message to deliver: m itself unless a tool was dropped.
func (s *modernState) inbound(m []byte, warn func(tool, reason string)) []byte {
	s.mu.Lock()
	waiting := len(s.lists) > 0
	s.mu.Unlock()
	if !waiting {
		return m
	}
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(m, &resp) != nil || resp.Method != "" || len(resp.ID) == 0 {
		return m
	}
	k := jsonrpc.IDKey(resp.ID)
	s.mu.Lock()
	ok := s.lists[k]
	delete(s.lists, k)
	s.mu.Unlock()
	if !ok || len(resp.Result) == 0 {
		return m
	}
	var result map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(resp.Result, &result) != nil || json.Unmarshal(result["tools"], &tools) != nil {
		return m
	}
	kept := tools[:0:0]
	learned := map[string][]paramBinding{}
	for _, raw := range tools {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		json.Unmarshal(raw, &t)
		binds, err := headerBindings(t.InputSchema)
		if err != "" {
			warn(t.Name, err)
			learned[t.Name] = nil // excluded: no headers for it either
			continue
		}
		learned[t.Name] = binds
		kept = append(kept, raw)
	}
	s.bindings.learn(learned)
	if len(kept) == len(tools) {
		return m
	}
	result["tools"], _ = json.Marshal(kept)
	rb, err := json.Marshal(result)
	if err != nil {
		return m
	}
	var whole map[string]json.RawMessage
	if json.Unmarshal(m, &whole) != nil {
		return m
	}
	whole["result"] = rb
	out, err := json.Marshal(whole)
	if err != nil {
		return m
	}
	return out
}

// maxToolHeaders bounds the tools whose bindings a ToolHeaders keeps; a
// server that lists more has its other tools' calls posted without
// Mcp-Param-* headers, which it refuses (HeaderMismatch) where they
// were due.
const maxToolHeaders = 4096

// ToolHeaders holds the x-mcp-header bindings of one server's tools, by
// tool name, learned from its tools/list results: the last listing of a
// tool wins, and a tool listed without bindings has none. It is safe for
// concurrent use by the connections that share it (Options.ToolHeaders).
type ToolHeaders struct {
	// mu guards m.
	mu sync.Mutex
	m  map[string][]paramBinding
}

// NewToolHeaders returns an empty ToolHeaders, to share among the
// connections to one server.
func NewToolHeaders() *ToolHeaders { return &ToolHeaders{m: map[string][]paramBinding{}} }

// learn records the bindings of each tool of one tools/list result (nil
// for a tool without any).
func (h *ToolHeaders) learn(tools map[string][]paramBinding) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, binds := range tools {
		if len(binds) == 0 {
			delete(h.m, name)
			continue
		}
		if _, known := h.m[name]; known || len(h.m) < maxToolHeaders {
			h.m[name] = binds
		}
	}
}

// get returns the bindings of the tool named name, or nil.
func (h *ToolHeaders) get(name string) []paramBinding {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[name]
}

// paramBinding is one x-mcp-header annotation: the property path in the
// arguments, and the header's name part.
type paramBinding struct {
	path   []string
	header string
}

// schemaKeywords are the JSON Schema keywords whose values are schemas (or
// arrays or maps of schemas): an x-mcp-header found under any of them is
// not statically reachable. Other keywords (enum, const, default,
// examples) hold instance values, never annotations.
var schemaKeywords = map[string]bool{
	"items": true, "prefixItems": true, "additionalProperties": true, "unevaluatedProperties": true,
	"unevaluatedItems": true, "contains": true, "propertyNames": true, "not": true, "if": true,
	"then": true, "else": true, "allOf": true, "anyOf": true, "oneOf": true,
}

// schemaMaps are the keywords whose values map names to schemas.
var schemaMaps = map[string]bool{"$defs": true, "definitions": true, "patternProperties": true, "dependentSchemas": true}

// headerBindings reads the x-mcp-header annotations of an inputSchema and
// checks them against the rules of 2026-07-28 ("Schema Extension"). It
// returns the reason the tool is invalid, or "".
func headerBindings(schema json.RawMessage) ([]paramBinding, string) {
	if len(schema) == 0 || !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil, ""
	}
	var root map[string]any
	if json.Unmarshal(schema, &root) != nil {
		return nil, ""
	}
	w := &bindingWalk{seen: map[string]bool{}}
	w.schema(root, nil, true)
	if w.err != "" {
		return nil, w.err
	}
	slices.SortFunc(w.out, func(a, b paramBinding) int { return strings.Compare(a.header, b.header) })
	return w.out, ""
}

type bindingWalk struct {
	out  []paramBinding
	seen map[string]bool
	err  string
}

// schema walks one schema object; static says it is reached from the
// root through properties alone.
func (w *bindingWalk) schema(s map[string]any, path []string, static bool) {
	if w.err != "" {
		return
	}
	if raw, ok := s["x-mcp-header"]; ok {
		w.annotation(s, raw, path, static)
	}
	for _, key := range slices.Sorted(maps.Keys(s)) {
		v := s[key]
		switch {
		case key == "properties":
			props, _ := v.(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(props)) {
				if child, ok := props[name].(map[string]any); ok {
					w.schema(child, append(slices.Clip(path), name), static)
				}
			}
		case schemaMaps[key]:
			m, _ := v.(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(m)) {
				w.any(m[name])
			}
		case schemaKeywords[key]:
			w.any(v)
		}
	}
}

// any walks a schema, or an array of schemas, that is not statically
// reachable.
func (w *bindingWalk) any(v any) {
	switch x := v.(type) {
	case map[string]any:
		w.schema(x, nil, false)
	case []any:
		for _, e := range x {
			w.any(e)
		}
	}
}

func (w *bindingWalk) annotation(s map[string]any, raw any, path []string, static bool) {
	name, _ := raw.(string)
	typ, _ := s["type"].(string)
	lower := strings.ToLower(name)
	switch {
	case !static || len(path) == 0:
		w.err = "an x-mcp-header annotation is not statically reachable through properties"
	case name == "" || !isToken(name):
		w.err = "x-mcp-header of property " + strings.Join(path, ".") + " is not an HTTP field-name token"
	case typ != "string" && typ != "integer" && typ != "boolean":
		w.err = "x-mcp-header of property " + strings.Join(path, ".") + " is on a " + typeName(typ) + ", not a string, integer or boolean"
	case w.seen[lower]:
		w.err = "x-mcp-header " + name + " is used twice (names compare case-insensitively)"
	default:
		w.seen[lower] = true
		w.out = append(w.out, paramBinding{path: path, header: name})
	}
}

func typeName(t string) string {
	if t == "" {
		return "property of no single type"
	}
	return t
}

// isToken reports whether s is an RFC 9110 token (1*tchar).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return s != ""
}

// paramValue reads the argument at path as its header text: a string as
// it is, an integer in decimal, a boolean as true or false. A missing or
// null value, or one of another type, gives no header.
func paramValue(args json.RawMessage, path []string) (string, bool) {
	cur := args
	for _, p := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return "", false
		}
		v, ok := obj[p]
		if !ok {
			return "", false
		}
		cur = v
	}
	cur = bytes.TrimSpace(cur)
	switch {
	case len(cur) == 0 || string(cur) == "null":
		return "", false
	case cur[0] == '"':
		var s string
		if json.Unmarshal(cur, &s) != nil {
			return "", false
		}
		return s, true
	case string(cur) == "true" || string(cur) == "false":
		return string(cur), true
	}
	// An integer, possibly written 42.0 or 4.2e1, within the range a
	// JSON peer reads exactly (-(2^53-1) to 2^53-1).
	f, ok := new(big.Float).SetPrec(2048).SetString(string(cur))
	if !ok || !f.IsInt() {
		return "", false
	}
	n, _ := f.Int(nil)
	if n.CmpAbs(big.NewInt(1<<53-1)) > 0 {
		return "", false
	}
	return n.String(), true
}

// headerValue encodes a value for Mcp-Name or Mcp-Param-*: as it is when
// it is visible ASCII, space and tab with no space at either end and not
// shaped like the sentinel; otherwise =?base64?…?= of its UTF-8 bytes.
func headerValue(s string) string {
	plain := s == strings.Trim(s, " \t") && !(strings.HasPrefix(s, base64Open) && strings.HasSuffix(s, base64Close))
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c == '\t' || c >= 0x20 && c <= 0x7e
	}
	if plain {
		return s
	}
	return base64Open + base64.StdEncoding.EncodeToString([]byte(s)) + base64Close
}

// modernErrorCodes mark a modern server's answer to a request it will not
// serve as is: a 400 or 404 carrying one of them identifies a server of
// 2026-07-28 or later, so an initialize that gets one does not fall back
// to HTTP+SSE (basic/transports/streamable-http, "Backward Compatibility").
var modernErrorCodes = map[int]bool{
	mcp.HEADER_MISMATCH:                    true,
	mcp.MISSING_REQUIRED_CLIENT_CAPABILITY: true,
	mcp.UNSUPPORTED_PROTOCOL_VERSION:       true,
	mcp.METHOD_NOT_FOUND:                   true,
}

// rpcErrorBody reads the JSON-RPC error response an HTTP error status
// carries, and returns it under the request's id, with its code. ok is
// false when the body is no JSON-RPC error response.
func rpcErrorBody(body string, id json.RawMessage) (msg []byte, code int, ok bool) {
	var e struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    *int   `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.JSONRPC != mcp.JSONRPC_VERSION || e.Error == nil || e.Error.Code == nil {
		return nil, 0, false
	}
	var whole map[string]json.RawMessage
	json.Unmarshal([]byte(body), &whole)
	if len(id) > 0 {
		whole["id"] = id
	}
	out, err := json.Marshal(whole)
	if err != nil {
		return nil, 0, false
	}
	return out, *e.Error.Code, true
}

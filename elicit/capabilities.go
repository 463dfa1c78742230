package elicit

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// rewriteInitialize records the client's own elicitation capability and
// declares form elicitation to the server, so servers elicit even when the
// client cannot answer (DESIGN decision 2). With route client the
// capabilities pass unchanged: only the client answers then.
func (p *Proxy) rewriteInitialize(m *message, raw []byte) []byte {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || params == nil {
		return raw // not an initialize the bridge can read: pass it on
	}
	var caps map[string]json.RawMessage
	if c, ok := params["capabilities"]; ok && json.Unmarshal(c, &caps) != nil {
		return raw
	}
	var version string
	_ = json.Unmarshal(params["protocolVersion"], &version)
	elic := p.noteClientElicitation(m.ID, caps["elicitation"])
	p.mu.Lock()
	route := p.route
	p.mu.Unlock()
	if route == RouteClient {
		return raw
	}
	if elic == nil {
		elic = map[string]json.RawMessage{}
	}
	if supportsModes(version) {
		// Operators answer both modes: form questions, and URL questions
		// whose link they open themselves.
		for _, mode := range elicitationModes {
			if _, ok := elic[mode]; !ok {
				elic[mode] = json.RawMessage("{}")
			}
		}
	}
	out, err := setPath(raw, elic, "params", "capabilities", "elicitation")
	if err != nil {
		return raw
	}
	return out
}

// noteClientElicitation records what the client declared about elicitation
// at initialize (the raw capabilities.elicitation member, nil when absent)
// and returns it as an object, or nil when it declared none.
func (p *Proxy) noteClientElicitation(initID, declared json.RawMessage) map[string]json.RawMessage {
	var elic map[string]json.RawMessage
	ok := len(declared) > 0 && string(declared) != "null" && json.Unmarshal(declared, &elic) == nil
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initID = idKey(initID)
	p.clientElicit = ok
	if ok {
		_, hasForm := elic[mcp.ElicitationModeForm]
		_, hasURL := elic[mcp.ElicitationModeURL]
		// An empty elicitation object means form mode (MCP 2025-11-25).
		p.clientForm = hasForm || !hasURL
		p.clientURL = hasURL
	}
	return elic
}

// supportsModes reports whether a protocol revision knows elicitation modes
// (2025-11-25 and later); earlier ones declare elicitation as {}.
func supportsModes(version string) bool {
	return version != "" && strings.Compare(version, mcp.ProtocolVersion20251125) >= 0
}

// elicitationModes are the modes the bridge declares for operators: form
// questions, and URL questions whose link they open themselves.
var elicitationModes = []string{mcp.ElicitationModeForm, mcp.ElicitationModeURL}

// metaPrefix begins every key MCP reserves in _meta (2026-07-28); a request
// without it carries no per-request capabilities. mcp-go exports the keys,
// not the prefix.
const metaPrefix = "io.modelcontextprotocol/"

const (
	metaCapabilities = mcp.MetaKeyClientCapabilities
	metaVersion      = mcp.MetaKeyProtocolVersion
)

// injectMetaCapabilities declares elicitation in a modern request's
// per-request client capabilities, so servers ask (DESIGN decision 2), and
// reports whether the client declared elicitation itself.
func (p *Proxy) injectMetaCapabilities(m *message, raw []byte) ([]byte, bool) {
	if !bytes.Contains(m.Meta, []byte(metaPrefix)) {
		return raw, false // not a 2026-07-28 request: nothing to parse
	}
	meta, declared := p.declareInMeta(m.Meta)
	if meta == nil {
		return raw, declared
	}
	out, err := setPath(raw, json.RawMessage(meta), "params", "_meta")
	if err != nil {
		return raw, declared
	}
	return out, declared
}

// declareInMeta returns a request's _meta with elicitation declared in
// its per-request client capabilities, or nil when there is nothing to
// change (no capabilities object, or route client), and whether the
// client declared elicitation itself.
func (p *Proxy) declareInMeta(raw json.RawMessage) ([]byte, bool) {
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil || meta == nil {
		return nil, false
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(meta[metaCapabilities], &caps) != nil || caps == nil {
		// No capabilities object (absent, null, not an object): MCP
		// 2026-07-28 requires one in every request's _meta, so the
		// request passes as it is, for the server to refuse as it would
		// directly; the bridge completes what the client declared, never
		// makes a malformed request valid.
		return nil, false
	}
	_, declared := caps["elicitation"]
	p.mu.Lock()
	route := p.route
	p.mu.Unlock()
	if route == RouteClient {
		return nil, declared
	}
	var elic map[string]json.RawMessage
	json.Unmarshal(caps["elicitation"], &elic)
	if elic == nil {
		elic = map[string]json.RawMessage{}
	}
	for _, mode := range elicitationModes {
		if _, ok := elic[mode]; !ok {
			elic[mode] = json.RawMessage("{}")
		}
	}
	out, err := setPath(raw, elic, metaCapabilities, "elicitation")
	if err != nil {
		return nil, declared
	}
	return out, declared
}

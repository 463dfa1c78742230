package elicit

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Who is on each side, in every protocol revision:
//   - the server names itself in its initialize result's serverInfo
//     (2025 revisions), and under 2026-07-28 in the
//     io.modelcontextprotocol/serverInfo _meta of its results,
//     server/discover's among them;
//   - the client names itself in initialize's clientInfo, or under
//     2026-07-28 in the io.modelcontextprotocol/clientInfo _meta of its
//     requests.
//
// The server's name is the subject of its questions (unless --name says
// otherwise), and so what operator scopes match; the client's name is in
// session.started and credits its answers.
//
// The server's name is the first it gives, whichever message gives it: a
// 2026-07-28 server could otherwise rename itself in any result's _meta,
// mid-session, and so pick which scoped operators see its next question.
// A later, different name is ignored and logged, once a session.

// implementation is the name and version of a peer.
type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// learnServer learns the server's name from a response: the initialize
// result's serverInfo, or the serverInfo _meta of any result. The first
// name stays.
func (p *Proxy) learnServer(m *message) {
	if len(m.Result) == 0 {
		return
	}
	p.mu.Lock()
	isInit := p.initID != "" && idKey(m.ID) == p.initID
	settled := p.serverName != "" && p.renameLogged
	p.mu.Unlock()
	if settled {
		return // named, and a rename already said: nothing left to learn
	}
	var name string
	switch {
	case isInit:
		var res struct {
			ServerInfo implementation `json:"serverInfo"`
		}
		if json.Unmarshal(m.Result, &res) == nil {
			name = res.ServerInfo.Name
		}
	case bytes.Contains(m.ResultMeta, []byte(mcp.MetaKeyServerInfo)):
		var meta map[string]json.RawMessage
		var info implementation
		if json.Unmarshal(m.ResultMeta, &meta) == nil && json.Unmarshal(meta[mcp.MetaKeyServerInfo], &info) == nil {
			name = info.Name
		}
	}
	if name == "" {
		return
	}
	p.mu.Lock()
	kept := p.serverName
	if kept == "" {
		p.serverName = name
	}
	renamed := kept != "" && kept != name && !p.renameLogged
	if renamed {
		p.renameLogged = true
	}
	p.mu.Unlock()
	if renamed {
		p.log.Warn("the MCP server renamed itself mid-session; its first name stays the subject of its questions (and what operator scopes match), and further renames are not logged",
			"server", kept, "ignored", clipName(name))
	}
}

// clipName bounds a name the server gave for a log line.
func clipName(name string) string {
	const most = 256
	if len(name) <= most {
		return name
	}
	return strings.ToValidUTF8(name[:most], "") + "…"
}

// clientMeta reads the per-request client info and protocol version of a
// 2026-07-28 request's _meta.
func clientMeta(m *message) (ClientInfo, bool) {
	if !bytes.Contains(m.Params, []byte(mcp.MetaKeyClientInfo)) {
		return ClientInfo{}, false
	}
	var params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var info implementation
	if json.Unmarshal(m.Params, &params) != nil || json.Unmarshal(params.Meta[mcp.MetaKeyClientInfo], &info) != nil || info.Name == "" {
		return ClientInfo{}, false
	}
	var version string
	json.Unmarshal(params.Meta[mcp.MetaKeyProtocolVersion], &version)
	return ClientInfo{Name: info.Name, Version: info.Version, ProtocolVersion: version}, true
}

// startSession reports the client once, on its first message, with what
// that message says about it: initialize's clientInfo, or the clientInfo
// _meta of a 2026-07-28 request. A client that named itself only later
// is still credited by name for its answers.
func (p *Proxy) startSession(m *message) {
	p.mu.Lock()
	done := p.sessionStarted && p.clientInfo.Name != ""
	p.mu.Unlock()
	if done {
		return // the usual case: nothing left to learn
	}
	var info ClientInfo
	known := false
	if m.Method == string(mcp.MethodInitialize) {
		var params struct {
			ProtocolVersion string         `json:"protocolVersion"`
			ClientInfo      implementation `json:"clientInfo"`
		}
		if json.Unmarshal(m.Params, &params) == nil {
			info, known = ClientInfo{Name: params.ClientInfo.Name, Version: params.ClientInfo.Version, ProtocolVersion: params.ProtocolVersion}, true
		}
	} else {
		info, known = clientMeta(m)
	}
	p.mu.Lock()
	if known && p.clientInfo.Name == "" {
		p.clientInfo = info
	}
	if p.sessionStarted {
		p.mu.Unlock()
		return
	}
	p.sessionStarted = true
	info = p.clientInfo
	p.mu.Unlock()
	if p.onSession != nil {
		p.onSession(info)
	}
}

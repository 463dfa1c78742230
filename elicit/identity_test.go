package elicit

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestServerNameIsFrozen: the server's name, which its questions show and
// operator scopes match, is the first it gives (initialize's serverInfo,
// or the serverInfo _meta of a result, server/discover's among them); a
// later result naming it otherwise changes nothing and is logged, once.
func TestServerNameIsFrozen(t *testing.T) {
	const (
		meta2026 = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
		initReq  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`
		initRes  = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"deploy-web","version":"1"}}}`
		discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + meta2026 + `}}}`
		listReq  = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{` + meta2026 + `}}}`
		listReq3 = `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{` + meta2026 + `}}}`
	)
	named := func(id int, name string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":{"resultType":"complete","tools":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"` + name + `","version":"1"}}}}`
	}
	tests := []struct {
		name       string
		flag       string   // --name
		exchange   []string // client, server, client, server, …
		want       string
		wantLogged int // warnings about a rename
	}{
		{name: "initialize names it", exchange: []string{initReq, initRes}, want: "deploy-web"},
		{name: "a result's _meta after initialize renames nothing", exchange: []string{initReq, initRes, listReq, named(2, "billing")}, want: "deploy-web", wantLogged: 1},
		{name: "server/discover names it", exchange: []string{discover, named(1, "deploy-web")}, want: "deploy-web"},
		{name: "a later result renames nothing, and is logged once", exchange: []string{discover, named(1, "deploy-web"), listReq, named(2, "billing"), listReq3, named(3, "payroll")},
			want: "deploy-web", wantLogged: 1},
		{name: "the same name again is no rename", exchange: []string{discover, named(1, "deploy-web"), listReq, named(2, "deploy-web")}, want: "deploy-web"},
		{name: "a result before discovery names it first", exchange: []string{listReq, named(2, "deploy-web"), discover, named(1, "billing")}, want: "deploy-web", wantLogged: 1},
		{name: "--name wins whatever the server says", flag: "ops", exchange: []string{discover, named(1, "deploy-web"), listReq, named(2, "billing")}, want: "ops", wantLogged: 1},
		{name: "no name yet", exchange: []string{listReq}, want: "mcp-server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs testenv.Buffer
			p := New(Options{Client: newMemConn(), Server: newMemConn(), Manager: &fakeLifecycle{}, Route: RouteBoth, Name: tt.flag,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			for i, m := range tt.exchange {
				if i%2 == 0 {
					p.fromClient([]byte(m))
				} else {
					p.fromServer([]byte(m))
				}
			}
			if got := p.ServerName(); got != tt.want {
				t.Errorf("the questions are attributed to %q; want %q", got, tt.want)
			}
			if got := strings.Count(logs.String(), "renamed itself"); got != tt.wantLogged {
				t.Errorf("%d rename warnings; want %d. The log:\n%s", got, tt.wantLogged, logs.String())
			}
		})
	}
}

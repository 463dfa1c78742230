package authority_test

import (
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
)

// noQuestions is a hub with no open question.
type noQuestions struct{}

func (noQuestions) OpenFrom(string) int                    { return 0 }
func (noQuestions) DropOpen(string, func(string) bool) int { return 0 }
func (noQuestions) Left(string, bool)                      {}
func (noQuestions) Back(string)                            {}

// A bridge that joined through /join writes its session; a token holder
// on /socket may not write into it, and commands go to the bridge.
func Example() {
	t := authority.NewTable[string, string](noQuestions{})
	bridge := t.Connect(authority.Bridge(""), "bridge")
	t.SayHello(bridge, authority.Hello{Emitter: true, Agent: "b", Resume: "bridge-secret"})
	if _, why := t.Write(bridge, "aep://vm/agent/b/session/S", "S"); why == nil {
		t.Sequenced(bridge, "aep://vm/agent/b/session/S", "S")
	}
	other := t.Connect(authority.TokenHolder(), "other")
	t.SayHello(other, authority.Hello{Emitter: true, Agent: "e", Resume: "other-secret"})
	_, why := t.Write(other, "aep://evil/agent/e", "S")
	fmt.Println(why.Code(), why.Reason)
	r, _ := t.Route("S")
	fmt.Println("commands for S go to", r.Conn.Peer)
	// Output:
	// unauthorized joined-source
	// commands for S go to bridge
}

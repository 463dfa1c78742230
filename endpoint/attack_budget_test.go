package endpoint

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// socketPeer opens /socket of addr with the bearer token and says hello as
// an emitter.
func socketPeer(t *testing.T, addr, agent string) *peer {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/socket", http.Header{"Authorization": {"Bearer " + procToken}})
	if err != nil {
		t.Fatalf("dialing /socket of %s: %v", addr, err)
	}
	return helloPeer(t, c, agent, "flood")
}

// flood asks questions without expires_at, each close to the largest event
// the hub takes, then smaller ones as the hub refuses them, until a
// question of a few hundred bytes is refused or limit bytes are asked; it
// returns how many bytes of questions the hub took.
func (p *peer) flood(limit int) int {
	p.t.Helper()
	taken := 0
	for i, size := 0, 900<<10; taken < limit && size >= 256; i++ {
		ev := fmt.Sprintf(`{"aep":"0.1","id":"FLOOD-%d","type":"attention.requested","time":%q,"source":"aep://flood/agent/flood/session/F","agent":"flood","session":"F","seq":%d,"data":{"kind":"input","prompt":%q}}`,
			i, aep.FormatTime(time.Now()), i, strings.Repeat("x", size))
		if refusal := p.sendEvent(ev, nil); refusal != nil {
			if refusal["code"] != "limit-exceeded" {
				p.t.Fatalf("the flood's question %d: %v", i, refusal)
			}
			size /= 2
			continue
		}
		taken += len(ev)
	}
	return taken
}

// TestAttackOpenQuestionBudget replays issue 21's sixth attack on real
// processes: a /socket emitter with the token fills the hub's open
// questions with questions that never expire. While it is connected, and
// after it left, a joined bridge's question still reaches the operators.
func TestAttackOpenQuestionBudget(t *testing.T) {
	t.Parallel()
	_, hubAddr := startHub(t, "hub", "127.0.0.1:0")
	b, mc := startJoinedBridge(t, "bridge-b", hubAddr)
	questions := streamEvents(t, hubAddr, url.QueryEscape(`{"type":"attention.requested","agent":"bridge-b"}`))

	f := socketPeer(t, hubAddr, "flood")
	took := f.flood(80 << 20)
	t.Logf("the hub took %d MiB of the flood's questions", took>>20)
	for _, when := range []string{"while the flood is connected", "after the flood left"} {
		if when == "after the flood left" {
			f.c.Close()
		}
		from := len(b.stderr.String())
		result := callAsk(mc, `{"type":"object","properties":{"ok":{"type":"boolean"}}}`)
		if why := awaitQuestion(questions, result, b, from); why != "" {
			t.Errorf("%s, the bridge's question never reached the operators: %s", when, why)
		}
	}
}

// awaitQuestion waits for the next question on questions; it returns why
// none came: the bridge's ask ended, or the hub refused the bridge's event.
// Only what the bridge logged from offset from on counts.
func awaitQuestion(questions <-chan map[string]any, result <-chan string, b *proc, from int) string {
	deadline := time.After(procWait)
	for {
		changed := b.stderr.Changed()
		logged := b.stderr.String()[from:]
		if i := strings.Index(logged, "refused an event of this bridge"); i >= 0 {
			line, _, _ := strings.Cut(logged[i:], "\n")
			return "the hub refused it: " + line
		}
		select {
		case <-questions:
			return ""
		case got := <-result:
			return "its server got " + got
		case <-changed:
		case <-deadline:
			return "nothing happened"
		}
	}
}

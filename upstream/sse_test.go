package upstream

import (
	"strings"
	"testing"
)

func TestReadSSE(t *testing.T) {
	in := ": comment\nid: 1\nevent: message\ndata: {\"a\":\ndata: 1}\n\nretry: 10\n\ndata: x\n\n"
	var got []sseEvent
	if err := readSSE(strings.NewReader(in), func(e sseEvent) bool { got = append(got, e); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].id != "1" || got[0].event != "message" || string(got[0].data) != "{\"a\":\n1}" || string(got[1].data) != "x" {
		t.Fatalf("got %+v", got)
	}
}

// FuzzReadSSE feeds arbitrary server bytes to the event-stream parser: it
// must never panic, and every event it yields is whole.
func FuzzReadSSE(f *testing.F) {
	f.Add("id: e1\ndata: {\"jsonrpc\":\"2.0\"}\n\n")
	f.Add("event: endpoint\ndata: /message?sessionId=1\n\n: ping\n\n")
	f.Add("data:\ndata\n\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		readSSE(strings.NewReader(s), func(e sseEvent) bool {
			if strings.Contains(e.id, "\n") || strings.Contains(e.event, "\n") {
				t.Fatalf("a field spans lines: %+v", e)
			}
			return true
		})
	})
}

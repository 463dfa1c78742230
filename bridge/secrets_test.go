package bridge

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// TestSecretFieldAndExactNumbersEndToEnd: a real server asks for a
// password and an integer. At every ceiling, full included, neither the
// bus nor the JSONL log ever holds the password, the rejection detail
// names the field and the rule as built, and the server receives the real
// password and the integer 1e18 as its exact digits.
func TestSecretFieldAndExactNumbersEndToEnd(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"username":{"type":"string"},"password":{"type":"string","minLength":8},"n":{"type":"integer"}},"required":["username","password"]}`
	for _, c := range []aep.Capture{aep.CaptureFull, aep.CaptureRedacted, aep.CaptureMetadata} {
		t.Run(c.String(), func(t *testing.T) {
			s := startSession(t, sessionConfig{opts: Options{AttentionCapture: c}})
			call := s.call("ask", map[string]any{"schema": schema}, nil)
			req := s.next("attention.requested")
			var rd aep.AttentionRequested
			json.Unmarshal(req.Data, &rd)
			for _, f := range rd.Fields {
				if (f.ID == "password") != f.Secret {
					t.Errorf("field %s: secret %v", f.ID, f.Secret)
				}
			}
			res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"username": "ada", "password": "s3cret", "n": json.Number("1e18")}})
			var rej aep.Rejected
			json.Unmarshal(res.Ack.Data, &rej)
			if want := `field "password": minLength: must be at least 8 characters`; c >= aep.CaptureRedacted && rej.Detail != want {
				t.Errorf("detail: got %q; want %q", rej.Detail, want)
			}
			res, _ = s.respond(req.ID, aep.Answer{Values: map[string]any{"username": "ada", "password": "s3cretpass", "n": json.Number("1e18")}})
			if !res.Accepted() {
				t.Fatalf("answer not accepted: %s", res.Raw)
			}
			if got, want := toolText(t, s.result(call)), `{"action":"accept","content":{"n":1000000000000000000,"password":"s3cretpass","username":"ada"}}`; got != want {
				t.Errorf("the server received %s; want %s", got, want)
			}
			answered := s.next("attention.answered")
			if strings.Contains(string(answered.Data), "s3cret") {
				t.Errorf("attention.answered on the bus holds the secret: %s", answered.Data)
			}
			s.close()
			log, err := os.ReadFile(s.b.LogPath())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(log), "s3cret") {
				t.Fatalf("the session log holds the secret:\n%s", log)
			}
		})
	}
}

package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func TestURLModeRequestPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ option, want string }{{"accept", "User completed the URL elicitation flow"}, {"decline", "User declined"}} {
		t.Run(tc.option, func(t *testing.T) {
			hook, changed := toolsChanged()
			s := startSession(t, sessionConfig{opts: Options{Command: everything(t)}, onNotify: hook})
			waitSignal(t, changed, "tools/list_changed")
			call := s.call("trigger-url-elicitation", map[string]any{"url": "https://login.example.com/authorize?state=abc", "message": "Sign in to the example"}, nil)
			req := s.next("attention.requested")
			var d aep.AttentionRequested
			json.Unmarshal(req.Data, &d)
			if d.Kind != "auth" || !strings.Contains(d.Prompt, "URL: https://login.example.com/authorize") || len(d.Options) != 3 {
				t.Fatalf("attention.requested: %+v", d)
			}
			if res, _ := s.respond(req.ID, aep.Answer{Option: tc.option}); !res.Accepted() {
				t.Fatalf("answer: %s", res.Raw)
			}
			if txt := strings.Join(texts(s.result(call)), "\n"); !strings.Contains(txt, tc.want) {
				t.Fatalf("server result: %s", txt)
			}
		})
	}
}

func TestURLModeErrorPath(t *testing.T) {
	t.Parallel()
	hook, changed := toolsChanged()
	s := startSession(t, sessionConfig{opts: Options{Command: everything(t)}, onNotify: hook})
	waitSignal(t, changed, "tools/list_changed")
	args := map[string]any{"url": "https://login.example.com/x", "errorPath": true}
	first := <-s.call("trigger-url-elicitation", args, nil)
	if first.err == nil || !strings.Contains(first.err.Error(), "URL elicitation required") {
		t.Fatalf("the -32042 error did not reach the client: %v", first.err)
	}
	req := s.next("attention.requested")
	var d aep.AttentionRequested
	json.Unmarshal(req.Data, &d)
	if d.Kind != "auth" || !strings.Contains(d.Prompt, "URL: https://modelcontextprotocol.io") {
		t.Fatalf("the listed elicitation was not raised: %+v", d)
	}
	if res, _ := s.respond(req.ID, aep.Answer{Option: "accept"}); !res.Accepted() {
		t.Fatalf("consent: %s", res.Raw)
	}
	// The client retries once the operator completed the flow.
	retry := s.call("trigger-url-elicitation", args, nil)
	again := s.next("attention.requested")
	s.respond(again.ID, aep.Answer{Option: "accept"})
	if txt := strings.Join(texts(s.result(retry)), "\n"); !strings.Contains(txt, "User completed") {
		t.Fatalf("retry result: %s", txt)
	}
}

func TestURLModeCompleteNotification(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	call := s.call("ask-url", map[string]any{"id": "el-42", "url": "https://auth.example.org/start"}, nil)
	req := s.next("attention.requested")
	s.result(s.call("complete-url", map[string]any{"id": "el-42"}, nil))
	resolved := s.next("attention.resolved")
	var rd aep.AttentionResolved
	json.Unmarshal(resolved.Data, &rd)
	if resolved.Subject != req.ID || rd.Resolution != "auto" {
		t.Fatalf("resolved %s %+v", resolved.Subject, rd)
	}
	if got := compactAny(elicitResult(t, s.result(call))); got != `{"action":"accept"}` {
		t.Fatalf("server got %s", got)
	}
	// A repeated or unknown completion is ignored.
	s.result(s.call("complete-url", map[string]any{"id": "el-42"}, nil))
	if res, _ := s.respond(req.ID, aep.Answer{Option: "accept"}); res.Accepted() {
		t.Fatal("an answer after completion was accepted")
	}
}

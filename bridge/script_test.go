package bridge

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/script"
)

func rules(t *testing.T, body string) *script.Rules {
	t.Helper()
	r, err := script.Load("answers.json", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const defaultsSchema = `{"type":"object","properties":{
 "env":{"type":"string","enum":["staging","production"],"default":"staging"},
 "replicas":{"type":"integer","minimum":1,"maximum":9,"default":2},
 "confirm":{"type":"boolean","default":true}},"required":["env"]}`

func TestScriptedOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rule, schema string
		timeout            time.Duration
		want               string
	}{
		{"values", `{"name":"r","outcome":"values","values":{"environment":"production","replicas":4,"confirm":true}}`, "pinned", 0,
			`{"action":"accept","content":{"confirm":true,"environment":"production","replicas":4}}`},
		{"defaults", `{"name":"r","outcome":"defaults"}`, defaultsSchema, 0,
			`{"action":"accept","content":{"confirm":true,"env":"staging","replicas":2}}`},
		{"decline", `{"name":"r","outcome":"decline"}`, "pinned", 0, `{"action":"decline"}`},
		{"cancel", `{"name":"r","outcome":"cancel"}`, "pinned", 0, `{"action":"cancel"}`},
		{"timeout", `{"name":"r","outcome":"timeout"}`, "pinned", 300 * time.Millisecond, `{"action":"cancel"}`},
		{"delay", `{"name":"r","outcome":"decline","delay":"200ms"}`, "pinned", 0, `{"action":"decline"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSession(t, sessionConfig{opts: Options{Answers: rules(t, `{"rules":[`+tt.rule+`]}`), Timeout: tt.timeout}})
			call := s.call("ask", map[string]any{"schema": tt.schema}, nil)
			req := s.next("attention.requested")
			got := compactAny(elicitResult(t, s.result(call)))
			if got != tt.want {
				t.Fatalf("server got %s; want %s", got, tt.want)
			}
			if tt.name == "timeout" {
				s.next("attention.timeout")
				return
			}
			answered := s.next("attention.answered")
			resolved := s.next("attention.resolved")
			var ad aep.AttentionAnswered
			var rd aep.AttentionResolved
			json.Unmarshal(answered.Data, &ad)
			json.Unmarshal(resolved.Data, &rd)
			if ad.By != "policy:r" || rd.Resolution != "auto" || answered.Subject != req.ID {
				t.Fatalf("bus record: answered by %q, resolution %q", ad.By, rd.Resolution)
			}
			if tt.name == "delay" {
				t1, _ := time.Parse(time.RFC3339Nano, req.Time)
				t2, _ := time.Parse(time.RFC3339Nano, answered.Time)
				if t2.Sub(t1) < 200*time.Millisecond {
					t.Fatalf("answered %s after the question; the rule's delay is 200ms", t2.Sub(t1))
				}
			}
		})
	}
}

func TestInvalidRuleFallsThroughToOperators(t *testing.T) {
	t.Parallel()
	var logs lockedWriter
	s := startSession(t, sessionConfig{opts: Options{Logger: textLogger(&logs),
		Answers: rules(t, `{"rules":[{"name":"bad replicas","outcome":"values","values":{"environment":"staging","confirm":true,"replicas":"three"}}]}`)}})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	if res, _ := s.respond(req.ID, aep.Answer{Option: "decline"}); !res.Accepted() {
		t.Fatalf("the operator's answer after a refused rule: %s", res.Raw)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" {
		t.Fatalf("server got %v", got)
	}
	if l := logs.String(); !strings.Contains(l, `rule \"bad replicas\"`) || !strings.Contains(l, `field \"replicas\": type`) {
		t.Fatalf("the log does not name the rule, the field and the violated rule:\n%s", l)
	}
}

func TestAnswersOnlyCancelsUnmatchedQuestions(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{opts: Options{AnswersOnly: true,
		Answers: rules(t, `{"rules":[{"name":"other","match":{"server":"someone-else"},"outcome":"decline"}]}`)}})
	if got := compactAny(elicitResult(t, s.result(s.call("ask", map[string]any{"schema": "pinned"}, nil)))); got != `{"action":"cancel"}` {
		t.Fatalf("unmatched under --answers-only: %s", got)
	}
	answered := s.next("attention.answered")
	if !strings.Contains(string(answered.Data), "policy:answers-only") {
		t.Fatalf("answered: %s", answered.Data)
	}
}

func TestEverythingAnsweredByARule(t *testing.T) {
	t.Parallel()
	hook, changed := toolsChanged()
	s := startSession(t, sessionConfig{onNotify: hook, opts: Options{Command: everything(t),
		Answers: rules(t, `{"rules":[{"name":"kitchen sink","match":{"fields":{"all_of":["name","email"]}},"outcome":"values","values":{"name":"Ada"}}]}`)}})
	waitSignal(t, changed, "tools/list_changed")
	text := strings.Join(texts(s.result(s.call("trigger-elicitation-request", map[string]any{}, nil))), "\n")
	raw := text[strings.Index(text, "Raw result:")+len("Raw result:"):]
	var r struct {
		Action  string                     `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": `"Ada"`, "integer": `42`, "number": `3.14`, "untitledSingleSelectEnum": `"Monica"`,
		"firstLine": `"It was a dark and stormy night."`, "untitledMultipleSelectEnum": `["Guitar"]`,
		"titledSingleSelectEnum": `"hero-1"`, "titledMultipleSelectEnum": `["fish-1"]`, "legacyTitledEnum": `"pet-1"`}
	for k, w := range want {
		if g := compact(r.Content[k]); g != w {
			t.Errorf("%s: server got %s; want the default %s", k, g, w)
		}
	}
	if r.Action != "accept" || len(r.Content) != len(want) {
		t.Fatalf("server got %s", raw)
	}
}

// TestAnswersFromRoundTrip answers a session by hand, turns its log into
// rules, and replays them with --answers-only: the server receives the same
// content.
func TestAnswersFromRoundTrip(t *testing.T) {
	t.Parallel()
	values := map[string]any{"environment": "production", "replicas": json.Number("5"), "reason": "release 1.2", "confirm": true}
	first := startSession(t, sessionConfig{})
	call := first.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := first.next("attention.requested")
	first.respond(req.ID, aep.Answer{Values: values})
	byHand := compactAny(elicitResult(t, first.result(call)))
	first.close()

	f, err := os.Open(first.b.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file, err := script.FromLogs(map[string]io.Reader{"log": f}, []string{"log"}, func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(file)

	second := startSession(t, sessionConfig{opts: Options{AnswersOnly: true, Answers: rules(t, buf.String())}})
	replayed := compactAny(elicitResult(t, second.result(second.call("ask", map[string]any{"schema": "pinned"}, nil))))
	if replayed != byHand {
		t.Fatalf("replayed %s; answered by hand %s", replayed, byHand)
	}
}

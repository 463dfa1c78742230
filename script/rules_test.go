package script

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

func form(t *testing.T) *translate.Form {
	t.Helper()
	f, err := translate.Parse("Configure the deployment target", json.RawMessage(`{"type":"object","properties":{
		"env":{"type":"string","enum":["staging","production"],"default":"staging"},
		"replicas":{"type":"integer","minimum":1,"maximum":9,"default":2},
		"reason":{"type":"string"}},"required":["env","reason"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLoadRefusesBadFiles(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"malformed", `{"rules":[`, "not a valid answers file"},
		{"unknown key", `{"rules":[{"name":"a","outcome":"decline","colour":"red"}]}`, "colour"},
		{"no name", `{"rules":[{"outcome":"decline"}]}`, "needs a name"},
		{"duplicate name", `{"rules":[{"name":"a","outcome":"decline"},{"name":"a","outcome":"cancel"}]}`, `rule "a": the name is used`},
		{"unknown outcome", `{"rules":[{"name":"a","outcome":"approve"}]}`, `rule "a": unknown outcome "approve"`},
		{"values without values", `{"rules":[{"name":"a","outcome":"values"}]}`, "needs a values object"},
		{"bad regexp", `{"rules":[{"name":"a","outcome":"decline","match":{"message":"(["}}]}`, `rule "a": match.message is not a valid regular expression`},
		{"both field forms", `{"rules":[{"name":"a","outcome":"decline","match":{"fields":{"all_of":["x"],"exact":["x"]}}}]}`, "exactly one of all_of and exact"},
		{"bad delay", `{"rules":[{"name":"a","outcome":"decline","delay":"soon"}]}`, `delay "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("answers.json", []byte(tt.file))
			var le *LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "answers.json") {
				t.Fatalf("got %v; want a LoadError naming the file and %q", err, tt.want)
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	rules, err := Load("a.json", []byte(`{"rules":[
		{"name":"other server","match":{"server":"elsewhere"},"outcome":"decline"},
		{"name":"needs field x","match":{"fields":{"all_of":["x"]}},"outcome":"decline"},
		{"name":"exact mismatch","match":{"fields":{"exact":["env","replicas"]}},"outcome":"decline"},
		{"name":"deploy","match":{"server":"srv","message":"^Configure","fields":{"exact":["env","reason","replicas"]}},"outcome":"values","values":{"reason":"ci"},"delay":"10ms"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	d, ok, err := rules.Answer("srv", form(t))
	if err != nil || !ok || d.Rule != "deploy" || d.Delay.Milliseconds() != 10 {
		t.Fatalf("got %+v %v %v", d, ok, err)
	}
	b, _ := json.Marshal(d.Answer.Result())
	if string(b) != `{"action":"accept","content":{"env":"staging","reason":"ci","replicas":2}}` {
		t.Fatalf("values merged over defaults: %s", b)
	}
	if _, ok, _ := rules.Answer("nobody", form(t)); ok {
		t.Fatal("a rule matched a server it does not name")
	}
}

func TestAnswerOutcomesAndConfigErrors(t *testing.T) {
	tests := []struct {
		name, rule, wantAction, wantErr string
		timeout                         bool
	}{
		{"decline", `{"name":"r","outcome":"decline"}`, "decline", "", false},
		{"cancel", `{"name":"r","outcome":"cancel"}`, "cancel", "", false},
		{"timeout", `{"name":"r","outcome":"timeout"}`, "", "", true},
		{"defaults without a required default", `{"name":"r","outcome":"defaults"}`, "", `rule "r"`, false},
		{"invalid value", `{"name":"r","outcome":"values","values":{"reason":"x","replicas":99}}`, "", `field "replicas": maximum`, false},
		{"unknown field", `{"name":"r","outcome":"values","values":{"reason":"x","colour":"red"}}`, "", `field "colour"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := Load("a.json", []byte(`{"rules":[`+tt.rule+`]}`))
			if err != nil {
				t.Fatal(err)
			}
			d, ok, err := rules.Answer("srv", form(t))
			if !ok {
				t.Fatal("no match")
			}
			if tt.wantErr != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v; want a ConfigError with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || d.Timeout != tt.timeout {
				t.Fatalf("got %+v %v", d, err)
			}
			if !tt.timeout && string(d.Answer.Result().Action) != tt.wantAction {
				t.Fatalf("action %s; want %s", d.Answer.Result().Action, tt.wantAction)
			}
		})
	}
}

func TestFromLogsNeverInventsValues(t *testing.T) {
	log := strings.Join([]string{
		`{"aep":"0.1","id":"Q1","type":"attention.requested","subject":"srv","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/b/session/s","agent":"b","session":"s","seq":0,"capture":"metadata","data":{"kind":"form","prompt":"b requests input (2 fields)","fields":[{"id":"name","type":"string","label":"name","required":true},{"id":"n","type":"number","label":"n","required":false}]}}`,
		`{"aep":"0.1","id":"A1","type":"attention.answered","subject":"Q1","time":"2026-01-01T00:00:01Z","source":"aep://h/agent/b/session/s","agent":"b","session":"s","seq":1,"capture":"metadata","data":{"answer":{"values":{"n":3}},"by":"op","via":"control"}}`,
	}, "\n")
	var warnings []string
	f, err := FromLogs(map[string]io.Reader{"s.jsonl": strings.NewReader(log)}, []string{"s.jsonl"}, func(s string) { warnings = append(warnings, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rules) != 1 || f.Rules[0].Outcome != "values" || len(f.Rules[0].Values) != 1 || strings.Join(f.Rules[0].Incomplete, ",") != "name" {
		t.Fatalf("got %+v", f.Rules)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "incomplete") {
		t.Fatalf("warnings %q", warnings)
	}
}

// TestScriptedNumbersStayExact: a rule's values reach the server exactly
// as the answers file writes them, through the same validation.
func TestScriptedNumbersStayExact(t *testing.T) {
	f, err := translate.Parse("m", json.RawMessage(`{"type":"object","properties":{
		"big":{"type":"integer","maximum":9223372036854775807},"huge":{"type":"integer"},"e":{"type":"integer"},"ratio":{"type":"number"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Load("a.json", []byte(`{"rules":[{"name":"r","outcome":"values","values":
		{"big":9223372036854775807,"huge":18446744073709551616,"e":1e18,"ratio":9007199254740993.5}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	d, ok, err := rules.Answer("srv", f)
	if !ok || err != nil {
		t.Fatalf("got %v %v", ok, err)
	}
	b, _ := json.Marshal(d.Answer.Result())
	want := `{"action":"accept","content":{"big":9223372036854775807,"e":1000000000000000000,"huge":18446744073709551616,"ratio":9007199254740993.5}}`
	if string(b) != want {
		t.Fatalf("got %s; want %s", b, want)
	}
	over, _ := Load("a.json", []byte(`{"rules":[{"name":"r","outcome":"values","values":{"big":9223372036854775808}}]}`))
	if _, _, err := over.Answer("srv", f); err == nil || !strings.Contains(err.Error(), `field "big": maximum: must be at most 9223372036854775807`) {
		t.Fatalf("got %v; want the maximum violated", err)
	}
}

// TestFromLogsNeverPrintsSecrets: a secret field's placeholder, and text
// the redaction pipeline rewrote, are never replayed as values; the rule
// lists those fields as incomplete. Exact numbers are replayed exactly.
func TestFromLogsNeverPrintsSecrets(t *testing.T) {
	tests := []struct {
		name, capture, values string
		wantValues            string
		wantIncomplete        string
	}{
		{"redacted", "redacted", `{"user":"[REDACTED:pii]","password":"[REDACTED:secret]","n":9007199254740993}`, `{"n":9007199254740993}`, "user,password"},
		{"full", "full", `{"user":"ada","password":"[REDACTED:secret]","n":1}`, `{"n":1,"user":"ada"}`, "password"},
		{"metadata", "metadata", `{"n":1}`, `{"n":1}`, "user,password"},
		{"full, secret not answered", "full", `{"user":"ada","n":1}`, `{"n":1,"user":"ada"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := strings.Join([]string{
				`{"aep":"0.1","id":"Q1","type":"attention.requested","subject":"srv","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/b/session/s","agent":"b","session":"s","seq":0,"capture":"metadata","data":{"kind":"form","prompt":"b requests input (3 fields)","fields":[{"id":"user","type":"string","label":"user","required":true},{"id":"password","type":"string","label":"password","required":false,"secret":true},{"id":"n","type":"number","label":"n","required":false}]}}`,
				`{"aep":"0.1","id":"A1","type":"attention.answered","subject":"Q1","time":"2026-01-01T00:00:01Z","source":"aep://h/agent/b/session/s","agent":"b","session":"s","seq":1,"capture":"` + tt.capture + `","data":{"answer":{"values":` + tt.values + `},"by":"op","via":"control"}}`,
			}, "\n")
			var warnings []string
			f, err := FromLogs(map[string]io.Reader{"s.jsonl": strings.NewReader(log)}, []string{"s.jsonl"}, func(s string) { warnings = append(warnings, s) })
			if err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(f)
			if strings.Contains(string(out), "REDACTED") {
				t.Fatalf("answers-from printed a placeholder: %s", out)
			}
			if len(f.Rules) != 1 {
				t.Fatalf("rules: %s", out)
			}
			vals, _ := json.Marshal(f.Rules[0].Values)
			if string(vals) != tt.wantValues || strings.Join(f.Rules[0].Incomplete, ",") != tt.wantIncomplete {
				t.Fatalf("values %s incomplete %v; want %s and %q", vals, f.Rules[0].Incomplete, tt.wantValues, tt.wantIncomplete)
			}
			if (len(warnings) == 1) != (tt.wantIncomplete != "") {
				t.Fatalf("warnings %q", warnings)
			}
		})
	}
}

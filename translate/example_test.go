package translate_test

import (
	"encoding/json"
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

func ExampleForm_Decide() {
	form, err := translate.Parse("How many replicas?", json.RawMessage(
		`{"type":"object","properties":{"replicas":{"type":"integer","minimum":1,"maximum":9}},"required":["replicas"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = form.Decide(aep.Answer{Values: map[string]any{"replicas": json.Number("12")}})
	fmt.Println(err)

	d, _ := form.Decide(aep.Answer{Values: map[string]any{"replicas": json.Number("3")}})
	b, _ := json.Marshal(d.Result())
	fmt.Println(string(b))

	d, _ = form.Decide(aep.Answer{Text: " Decline "})
	b, _ = json.Marshal(d.Result())
	fmt.Println(string(b))
	// Output:
	// field "replicas": maximum: must be at most 9
	// {"action":"accept","content":{"replicas":3}}
	// {"action":"decline"}
}

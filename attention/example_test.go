package attention_test

import (
	"encoding/json"
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

func ExampleFormRequest() {
	form, _ := translate.Parse("Pick a region", json.RawMessage(`{"type":"object",
		"properties":{"region":{"type":"string","title":"Region","enum":["eu","us"],"enumNames":["Europe","America"]}},
		"required":["region"]}`))
	for _, c := range []aep.Capture{aep.CaptureRedacted, aep.CaptureMetadata} {
		d, _ := attention.FormRequest(form, attention.RequestOptions{Agent: "aep-mcp-bridge", Ceiling: c})
		b, _ := json.Marshal(d)
		fmt.Println(string(b))
	}
	// Output:
	// {"kind":"form","prompt":"Pick a region","fields":[{"id":"region","type":"select","label":"Region","required":true,"choices":[{"id":"eu","label":"Europe"},{"id":"us","label":"America"}]}]}
	// {"kind":"form","prompt":"aep-mcp-bridge requests input (1 field)","fields":[{"id":"region","type":"select","label":"region","required":true,"choices":[{"id":"eu","label":"eu"},{"id":"us","label":"us"}]}]}
}

func ExampleGateValues() {
	fields := []aep.FieldSpec{
		{ID: "name", Type: "string", Label: "Name"},
		{ID: "replicas", Type: "number", Label: "Replicas"},
	}
	values := map[string]any{"name": "billing-api", "replicas": 3}
	fmt.Println(attention.GateValues(fields, values, aep.CaptureMetadata, nil))
	// Output: map[replicas:3]
}

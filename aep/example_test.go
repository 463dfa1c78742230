package aep_test

import (
	"encoding/json"
	"fmt"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func ExampleDownlevel() {
	e, _ := aep.Parse([]byte(`{"aep":"0.1","id":"A1","type":"attention.answered","subject":"R1",
		"time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s1","seq":3,
		"capture":"redacted","data":{"answer":{"text":"ship it","values":{"replicas":3,"name":"api"}},"via":"control"}}`))
	d, _ := aep.Downlevel(*e, aep.CaptureMetadata)
	fmt.Println(d.Capture, string(d.Data))
	// Output: metadata {"answer":{"values":{"replicas":3}},"via":"control"}
}

func ExampleRedactor_Text() {
	r := aep.NewRedactor(aep.RedactOptions{Home: "/home/op"})
	fmt.Println(r.Text("export API_KEY=sk_live_abcdef123456 from /home/op/app, mail ops@example.com"))
	// Output: export API_KEY=[REDACTED:secret] from ~/app, mail [REDACTED:pii]
}

func ExampleEvent_SetExtension() {
	var e aep.Event
	fmt.Println(e.SetExtension("acmeregion", "eu-1"))
	fmt.Println(e.SetExtension("session", "x"))
	b, _ := json.Marshal(e.Extensions)
	fmt.Println(string(b))
	// Output:
	// <nil>
	// AEP-0001 §5.4: session: extension attribute collides with a core attribute
	// {"acmeregion":"eu-1"}
}

package endpoint

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// FuzzFrame feeds arbitrary text frames through the socket's decoding:
// the frame, then whatever its type makes the socket parse (filter, from,
// an event). Nothing may panic, and every refusal is an error value.
func FuzzFrame(f *testing.F) {
	f.Add(`{"type":"hello","versions":["0.1"],"role":"both","identity":{"agent":"a","instance":"i"},"capabilities":{"control":{"accepts":["control.attention.respond"]}}}`)
	f.Add(`{"type":"subscribe","id":"s","filter":{"type":["attention.*"],"severity":{"gte":"notice"}},"from":[{"session":"s","epoch":0,"seq":3}],"capture":"metadata"}`)
	f.Add(`{"type":"subscribe","id":"s","from":"all"}`)
	f.Add(`{"aep":"0.1","id":"C","type":"control.attention.respond","subject":"Q","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/o","agent":"o","session":"s","data":{"answer":{"values":{"a":1}}}}`)
	f.Add(`{"type":"roster","id":"r"}`)
	f.Fuzz(func(t *testing.T, data string) {
		fr, err := aep.DecodeFrame([]byte(data))
		if err != nil {
			return
		}
		if aep.IsEventType(fr.Type) {
			aep.Parse([]byte(data))
			return
		}
		parseSubscription(fr.Filter, fr.Capture, fr.From)
		parseFrom(fr.From)
		parseEventID(fr.ID)
	})
}

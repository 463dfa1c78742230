package sse_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
)

func ExampleReader() {
	stream := ": a comment\r\n" +
		"id: 41\r\n" +
		"event: endpoint\r\n" +
		"data: /message?sessionId=7\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\n" +
		"data:  \"method\":\"ping\"}\n\n" +
		"retry: 2500\n\n"
	r := sse.NewReader(strings.NewReader(stream), sse.Options{})
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("id=%s type=%s data=%q\n", ev.ID, ev.Type, ev.Data)
	}
	retry, _ := r.Retry()
	fmt.Println("resume with Last-Event-ID", r.LastEventID(), "after", retry)
	// Output:
	// id=41 type=endpoint data="/message?sessionId=7"
	// id=41 type=message data="{\"jsonrpc\":\"2.0\",\n \"method\":\"ping\"}"
	// resume with Last-Event-ID 41 after 2.5s
}

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

// An event whose data passes StreamAbove comes with the first of its data
// in Data and the rest in Rest, so an event of any size passes through in
// bounded memory.
func ExampleReader_streamAbove() {
	stream := "id: 7\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\n" +
		"data: \"result\":{\"text\":\"a long answer\"}}\n\n"
	r := sse.NewReader(strings.NewReader(stream), sse.Options{StreamAbove: 16})
	ev, err := r.Next()
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	rest, err := io.ReadAll(ev.Rest)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("id=%s head=%q\nrest=%q\n", ev.ID, ev.Data, rest)
	// Output:
	// id=7 head="{\"jsonrpc\":\"2.0\",\"id\":1,"
	// rest="\n\"result\":{\"text\":\"a long answer\"}}"
}
